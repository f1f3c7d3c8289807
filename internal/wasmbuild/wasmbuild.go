// Package wasmbuild compiles plugins to WebAssembly for tests: Go plugin
// packages with the standard toolchain (GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared), C plugins with clang and wasi-libc, and
// WebAssembly text with wat2wasm.
package wasmbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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

// ErrNoC is returned by CompileC when clang cannot build for wasm32-wasi
// here.
var ErrNoC = errors.New("clang cannot build WebAssembly for wasm32-wasi here (Debian packages: clang lld wasi-libc libclang-rt-dev-wasm32)")

// CompileC compiles C sources with the C SDK in sdkDir (toolshed.h and
// toolshed.c) into the reactor module out, with Debian's clang and
// wasi-libc: clang --target=wasm32-wasi -O2 -mexec-model=reactor. The
// error wraps ErrNoC when the toolchain is missing.
func CompileC(out, sdkDir string, sources ...string) error {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return ErrNoC
	}
	args := append([]string{"--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wall", "-Wextra", "-Werror",
		"-Wl,--strip-all", "-I", sdkDir, "-o", out}, sources...)
	args = append(args, filepath.Join(sdkDir, "toolshed.c"))
	if msg, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		if bytes.Contains(msg, []byte("wasm-ld")) && bytes.Contains(msg, []byte("No such file")) ||
			bytes.Contains(msg, []byte("stdio.h' file not found")) || bytes.Contains(msg, []byte("stdlib.h' file not found")) ||
			bytes.Contains(msg, []byte("unable to execute command")) || bytes.Contains(msg, []byte("crt1-reactor.o")) {
			return fmt.Errorf("%w: %s", ErrNoC, bytes.TrimSpace(msg))
		}
		return fmt.Errorf("clang %v: %v\n%s", args, err, msg)
	}
	return nil
}

// C compiles C sources with the C SDK in sdkDir to a module and returns
// its bytes. Without the toolchain the test is skipped, or fails when CI
// is set (.ci/run installs it).
func C(t testing.TB, sdkDir string, sources ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	if err := CompileC(out, sdkDir, sources...); err != nil {
		if errors.Is(err, ErrNoC) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
