package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// scaffoldHome lays out a built binary as "make" does in a checkout
// (DIR/bin/toolshed beside DIR/plugin-manifests, here a link to this
// repository's) and returns it and an empty working folder.
func scaffoldHome(t *testing.T) (exe, work string) {
	t.Helper()
	bin := builtBinary(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root := t.TempDir()
	exe = filepath.Join(root, "checkout", "bin", "toolshed")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	if err := os.Link(bin, exe); err != nil {
		data, _ := os.ReadFile(bin)
		os.WriteFile(exe, data, 0o755)
	}
	repoCatalog, err := filepath.Abs(bundled)
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(repoCatalog, filepath.Join(root, "checkout", "plugin-manifests"))
	work = filepath.Join(root, "work")
	os.Mkdir(work, 0o755)
	return exe, work
}

func makeTest(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("make", "test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSHED_PLUGINS=", "TOOLSHED_CONFIG=", "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make test in %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

// TestPluginsNewGo: "toolshed plugins new demo && cd demo && make test"
// builds, pins, validates and passes the plugin's own tests, against the
// Go SDK the binary wrote into the folder (toolshed-sdk, named by a
// relative path); the folder's files are what the README describes.
func TestPluginsNewGo(t *testing.T) {
	exe, work := scaffoldHome(t)
	code, out, errs := runIn(t, work, exe, nil, "plugins", "new", "demo")
	if code != 0 {
		t.Fatalf("plugins new: exit %d %s%s", code, out, errs)
	}
	for _, f := range []string{"main.go", "main_test.go", "demo.json", "go.mod", "Makefile", "toolshed-sdk/go.mod", "toolshed-sdk/sdk/sdk.go", "toolshed-sdk/sdk/abi/abi.go"} {
		if _, err := os.Stat(filepath.Join(work, "demo", f)); err != nil {
			t.Errorf("the scaffold lacks %s", f)
		}
	}
	mod, _ := os.ReadFile(filepath.Join(work, "demo", "go.mod"))
	if !strings.Contains(string(mod), "replace github.com/toolshed/toolshed => ./toolshed-sdk\n") {
		t.Fatalf("go.mod does not point at the SDK beside it:\n%s", mod)
	}
	if tests, _ := filepath.Glob(filepath.Join(work, "demo", "toolshed-sdk", "sdk", "*_test.go")); len(tests) > 0 {
		t.Errorf("the SDK's tests were written: %v", tests)
	}
	log := makeTest(t, filepath.Join(work, "demo"))
	for _, want := range []string{"demo.json: sha256 ", "1 manifest, 1 tool: all valid", "ok  \texample.com/demo", "Hello, Toolshed!"} {
		if !strings.Contains(log, want) {
			t.Errorf("make test output lacks %q:\n%s", want, log)
		}
	}
	// Mistakes are refused before anything is written.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plugins", "new", "demo"}, "demo already exists"},
		{[]string{"plugins", "new", "Bad Name"}, "cannot name a plugin"},
		{[]string{"plugins", "new", "--lang", "rust", "other"}, `--lang "rust": want go or c`},
	} {
		if code, _, errs := runIn(t, work, exe, nil, c.args...); code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused scaffold left a folder: %v", err)
	}
}

// TestPluginsNewC: the C scaffold builds with clang and wasi-libc, pins,
// validates (compiling the module) and answers through toolshed call.
func TestPluginsNewC(t *testing.T) {
	exe, work := scaffoldHome(t)
	if err := wasmbuild.CompileC(filepath.Join(t.TempDir(), "probe.wasm"), "../../sdk/c/toolshed", "../../sdk/c/examples/echo/echo.c"); err != nil {
		if errors.Is(err, wasmbuild.ErrNoC) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	code, out, errs := runIn(t, work, exe, nil, "plugins", "new", "--lang", "c", "cdemo")
	if code != 0 {
		t.Fatalf("plugins new --lang c: exit %d %s%s", code, out, errs)
	}
	log := makeTest(t, filepath.Join(work, "cdemo"))
	for _, want := range []string{"cdemo.json: sha256 ", "(cdemo 0.1.0, 1 tool, compiled)", "cdemo: ok"} {
		if !strings.Contains(log, want) {
			t.Errorf("make test output lacks %q:\n%s", want, log)
		}
	}
}
