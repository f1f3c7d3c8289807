// Package wasmbuild compiles Go plugin packages to WebAssembly for tests,
// with the standard toolchain (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared).
package wasmbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
)

var (
	buildMu sync.Mutex
	built   = map[string]string{} // package dir → module path, per process
)

// Build compiles the main package at dir to a WebAssembly module (once per
// test process) and returns its path. It is safe for concurrent use.
func Build(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if out, ok := built[abs]; ok {
		return out
	}
	// One directory per plugin package, reused across runs: no litter.
	sum := sha256.Sum256([]byte(abs))
	outDir := filepath.Join(os.TempDir(), "toolshed-plugintest", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outDir, filepath.Base(abs)+".wasm")
	tmp := out + fmt.Sprintf(".%d.tmp", os.Getpid()) // concurrent test processes
	cmd := exec.Command(goTool(), "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", tmp, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plugintest: building %s: %v\n%s", dir, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	built[abs] = out
	return out
}

func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// WAT assembles WebAssembly text to a module with wat2wasm (Debian's
// wabt), all features enabled. Without wat2wasm the test is skipped, or
// fails when CI is set (CI installs it, so a skip there would hide the
// hostile suite).
func WAT(t testing.TB, src []byte) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("wat2wasm (Debian package wabt) is not installed")
		}
		t.Fatal("wat2wasm (Debian package wabt) is not installed; .ci/run installs it")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, "--enable-all", in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var shaField = regexp.MustCompile(`"sha256": "[0-9a-f]*"`)

// Bundled builds the named bundled plugins of the repository at root
// (plugins/NAME) into a new temporary directory, each beside its manifest
// (plugin-manifests/NAME.json) pinned to the module just built, and
// returns the directory.
func Bundled(t testing.TB, root string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		module, err := os.ReadFile(Build(t, filepath.Join(root, "plugins", name)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(module)
		man, err := os.ReadFile(filepath.Join(root, "plugin-manifests", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		man = shaField.ReplaceAll(man, []byte(`"sha256": "`+hex.EncodeToString(sum[:])+`"`))
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), module, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), man, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
