package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

var bundledBuild testBuild

// bundledBinary builds the binary as "make" does at its last step: with
// the tag toolshed_bundle, carrying the catalog's manifests, modules,
// grants and data. It needs the modules "make plugins" builds beside the
// manifests (the embedding cannot take them from elsewhere): without them
// the test is skipped, saying so; make test builds them first.
func bundledBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if m, _ := filepath.Glob(filepath.Join(bundled, "*.wasm")); len(m) == 0 {
		t.Skip("the bundled modules are not built (plugin-manifests/*.wasm): run make plugins, or make test")
	}
	return bundledBuild.get(t, "-tags", "toolshed_bundle")
}

// TestSelfContained (issue 25): the binary "make" builds, copied alone into
// an empty folder with empty caches, finds the weather tools by a Chinese
// query, calls calculate, and writes a Go plugin whose "make test" passes,
// and passes again after the folder is moved (no path in it leads back).
func TestSelfContained(t *testing.T) {
	src := bundledBinary(t)
	root := t.TempDir()
	dir := filepath.Join(root, "empty")
	os.Mkdir(dir, 0o755)
	bin := filepath.Join(dir, "toolshed")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + filepath.Join(root, "home"), "XDG_CACHE_HOME=" + filepath.Join(root, "cache"),
		"XDG_DATA_HOME=" + filepath.Join(root, "data"), "TOOLSHED_PLUGINS=", "TOOLSHED_CONFIG="}

	code, out, errs := runIn(t, dir, bin, env, "search", "天气")
	if code != 0 || !strings.Contains(out, "getCurrentWeather") || !strings.Contains(out, "getWeatherForecast") {
		t.Fatalf("search 天气: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runIn(t, dir, bin, env, "call", "calculate", `{"expression": "2 + 3 * 4"}`)
	if code != 0 || !strings.Contains(out, "14") {
		t.Fatalf("call calculate: exit %d\n%s%s", code, out, errs)
	}
	// The catalog's own grants apply: glossary reads its mounted data.
	code, out, errs = runIn(t, dir, bin, env, "plugins", "list")
	if code != 0 || !strings.Contains(out, "glossary") || !strings.Contains(out, "textkit") {
		t.Fatalf("plugins list: exit %d\n%s%s", code, out, errs)
	}
	// A changed copy in the cache is written again: the binary's catalog
	// is what serves.
	cached, _ := filepath.Glob(filepath.Join(root, "cache", "toolshed", "bundled", "*", "plugin-manifests", "calculate.json"))
	if len(cached) != 1 {
		t.Fatalf("the catalog was not written to the cache: %v", cached)
	}
	os.WriteFile(cached[0], []byte(`{"name": "tampered"}`), 0o644)
	if code, out, errs = runIn(t, dir, bin, env, "call", "calculate", `{"expression": "6 * 7"}`); code != 0 || !strings.Contains(out, "42") {
		t.Fatalf("after the cached copy changed: exit %d\n%s%s", code, out, errs)
	}

	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: the scaffold's build is not tried")
	}
	code, out, errs = runIn(t, dir, bin, env, "plugins", "new", "demo")
	if code != 0 {
		t.Fatalf("plugins new demo: exit %d\n%s%s", code, out, errs)
	}
	for _, f := range []string{"go.mod", "Makefile", "main.go", "main_test.go"} {
		b, err := os.ReadFile(filepath.Join(dir, "demo", f))
		if err != nil {
			t.Fatal(err)
		}
		if f != "Makefile" && strings.Contains(string(b), root) {
			t.Errorf("%s names a path of this machine:\n%s", f, b)
		}
	}
	makeIn := func(dir string, targets ...string) string {
		cmd := exec.Command("make", targets...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "MAKEFLAGS=", "GOFLAGS=")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %v in %s: %v\n%s", targets, dir, err, out)
		}
		return string(out)
	}
	log := makeIn(filepath.Join(dir, "demo"), "test")
	for _, want := range []string{"demo.json: sha256 ", "all valid", "ok  \texample.com/demo", "Hello, Toolshed!"} {
		if !strings.Contains(log, want) {
			t.Errorf("make test lacks %q:\n%s", want, log)
		}
	}
	// Moved, and the binary found on PATH only: it still builds and passes.
	moved := filepath.Join(root, "elsewhere", "demo-moved")
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(filepath.Join(dir, "demo"), moved); err != nil {
		t.Fatal(err)
	}
	pathBin := filepath.Join(root, "path")
	os.Mkdir(pathBin, 0o755)
	if err := os.Rename(bin, filepath.Join(pathBin, "toolshed")); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+pathBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log = makeIn(moved, "clean", "test")
	if !strings.Contains(log, "Hello, Toolshed!") || !strings.Contains(log, "ok  \texample.com/demo") {
		t.Errorf("make clean test after the move:\n%s", log)
	}
}

// TestWriteBundled: the catalog is written once under its content's name;
// a missing or changed file writes it again; a new catalog gets a new
// folder.
func TestWriteBundled(t *testing.T) {
	root := t.TempDir()
	cat := fstest.MapFS{
		"a.json":      {Data: []byte(`{"name": "a"}`)},
		"a.wasm":      {Data: []byte("\x00asm\x01\x00\x00\x00")},
		"data/x.json": {Data: []byte(`[1]`)},
	}
	dir, err := writeBundled(cat, root)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range cat {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != string(f.Data) {
			t.Fatalf("%s: %q %v", name, b, err)
		}
	}
	again, err := writeBundled(cat, root)
	if err != nil || again != dir {
		t.Fatalf("again: %s %v, want %s", again, err, dir)
	}
	os.Remove(filepath.Join(dir, "data", "x.json"))
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name": "evil"}`), 0o644)
	if again, err = writeBundled(cat, root); err != nil || again != dir {
		t.Fatalf("repair: %s %v", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.json")); string(b) != `{"name": "a"}` {
		t.Fatalf("a changed manifest stayed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "x.json")); err != nil {
		t.Fatal("a missing file was not written again")
	}
	cat["a.json"] = &fstest.MapFile{Data: []byte(`{"name": "a2"}`)}
	if other, err := writeBundled(cat, root); err != nil || other == dir {
		t.Fatalf("a new catalog: %s %v", other, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Errorf("%d entries under the root, want the two catalogs and nothing left over", len(entries))
	}
}
