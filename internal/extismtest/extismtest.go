// Package extismtest gives tests the prebuilt Extism plugins of
// github.com/extism/go-sdk v1.7.1: the few small ones kept in
// host/wasm/testdata/extism/gosdk, the others from the Go module cache,
// downloaded through the module proxy once per process. A test whose
// plugin cannot be had is skipped, saying why.
package extismtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// GoSDK is the module whose wasm/ folder holds the plugins.
const GoSDK = "github.com/extism/go-sdk@v1.7.1"

var download struct {
	once sync.Once
	dir  string
	err  error
}

// keptDir is where the small plugins are kept in this repository.
func keptDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "host", "wasm", "testdata", "extism", "gosdk")
}

// Wasm returns go-sdk's prebuilt plugin name ("count_vowels.wasm"), or
// skips the test when it cannot be had (no module proxy).
func Wasm(t testing.TB, name string) []byte {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(keptDir(), name)); err == nil {
		return b
	}
	download.once.Do(func() {
		cmd := exec.Command("go", "mod", "download", "-json", GoSDK)
		cmd.Dir = os.TempDir() // outside this module: its go.mod and go.sum stay as they are
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		var info struct{ Dir, Error string }
		if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
			download.err = fmt.Errorf("go mod download %s: %v %s", GoSDK, err, info.Error)
			return
		}
		download.dir = info.Dir
	})
	if download.err != nil {
		t.Skipf("Extism plugin %s unavailable: %v", name, download.err)
	}
	b, err := os.ReadFile(filepath.Join(download.dir, "wasm", name))
	if err != nil {
		t.Skipf("Extism plugin %s unavailable: %v", name, err)
	}
	return b
}
