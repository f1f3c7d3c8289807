package wasmcheck

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestBundledPlugins decodes the repository's plugins: every one must
// pass the host's budget, and the figures are the basis of its limits.
func TestBundledPlugins(t *testing.T) {
	files, _ := filepath.Glob("../../../../plugin-manifests/*.wasm")
	if len(files) == 0 {
		t.Skip("no bundled plugins built (make plugins)")
	}
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Check(code, Limits{})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		t.Logf("%s: %+v", filepath.Base(f), st)
	}
}

func TestLimitError(t *testing.T) {
	var le *LimitError
	_, err := Check([]byte("\x00asm\x01\x00\x00\x00"), Limits{ModuleBytes: 4})
	if !errors.As(err, &le) || le.Value != 8 || le.Max != 4 {
		t.Fatalf("err = %v", err)
	}
}
