package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// testBuild is a binary built once per test process.
type testBuild struct {
	once sync.Once
	path string
	err  error
}

var plainBuild testBuild

// builtBinary builds the toolshed binary once per test process, as make
// build does (so that the build cache serves it).
func builtBinary(t *testing.T) string { return plainBuild.get(t) }

// get builds the binary with the extra go build flags, once.
func (b *testBuild) get(t *testing.T, flags ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "toolshed-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "toolshed")
		args := append(append([]string{"build", "-trimpath"}, flags...), "-o", b.path, ".")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = &exitError{msg: "go build: " + err.Error() + "\n" + string(out)}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// installedCatalog makes a copy of the bundled catalog with the modules the
// tests call (sql, weather) built and pinned, its grants and data.
func installedCatalog(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "glossary-data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"_grants.json", "glossary-data/glossary.json"} {
		b, err := os.ReadFile(filepath.Join(bundled, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	copyUnits(t, dir, wasmbuild.Bundled(t, "../..", "sql", "weather"))
}

// copyUnits copies the files of the plugin folder from into dir.
func copyUnits(t *testing.T, dir, from string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	catalogOnce sync.Once
	catalogPath string
)

// builtCatalog is the bundled catalog with every module built and pinned,
// made once per test process (under testCacheDir): what "make plugins"
// leaves in plugin-manifests, without depending on it having run.
func builtCatalog(t *testing.T) string {
	t.Helper()
	catalogOnce.Do(func() {
		dir := filepath.Join(testCacheDir, "catalog")
		installedCatalog(t, dir)
		copyUnits(t, dir, wasmbuild.Bundled(t, "../..", "calculate", "chart", "glossary", "textkit"))
		catalogPath = dir
	})
	if catalogPath == "" {
		t.Fatal("the bundled catalog could not be built")
	}
	return catalogPath
}

// runIn runs the binary in dir (outside the repository) and returns its
// exit code, stdout and stderr.
func runIn(t *testing.T, dir, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	r := runBin(t, bin, dir, env, 5*time.Minute, args...)
	if r.killed {
		t.Fatalf("%s %v: still running after 5 minutes", bin, args)
	}
	return r.code, r.stdout, r.stderr
}

// TestInstalledLayouts: the binary finds its catalog beside itself, one
// level up (a checkout's bin/) and in PREFIX/share/toolshed, from any
// working directory; the catalog's own grants apply under every spelling
// of its path; without a catalog the error names every path tried.
func TestInstalledLayouts(t *testing.T) {
	bin := builtBinary(t)
	root := t.TempDir()
	catalogDir := filepath.Join(root, "catalog")
	installedCatalog(t, catalogDir)
	elsewhere := filepath.Join(root, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	env := []string{"XDG_DATA_HOME=" + filepath.Join(root, "data"), "XDG_CACHE_HOME=" + filepath.Join(root, "cache"),
		"TOOLSHED_PLUGINS=", "TOOLSHED_CONFIG="}
	layouts := map[string][2]string{ // name → binary, catalog folder
		"beside":   {"a/toolshed", "a/plugin-manifests"},
		"checkout": {"b/bin/toolshed", "b/plugin-manifests"},
		"share":    {"c/bin/toolshed", "c/share/toolshed/plugin-manifests"},
	}
	for name, l := range layouts {
		exe, cat := filepath.Join(root, l[0]), filepath.Join(root, l[1])
		os.MkdirAll(filepath.Dir(exe), 0o755)
		os.MkdirAll(filepath.Dir(cat), 0o755)
		if err := os.Link(bin, exe); err != nil { // a copy, not a symbolic link
			data, _ := os.ReadFile(bin)
			os.WriteFile(exe, data, 0o755)
		}
		os.Symlink(catalogDir, cat)
		code, out, errs := runIn(t, elsewhere, exe, env, "search", "天气")
		if code != 0 || !strings.Contains(out, "getCurrentWeather") {
			t.Fatalf("%s: search: exit %d %s%s", name, code, out, errs)
		}
		code, out, errs = runIn(t, elsewhere, exe, env, "call", "listTables", "{}")
		if code != 0 || !strings.Contains(out, "customers") {
			t.Fatalf("%s: call listTables: exit %d %s%s", name, code, out, errs)
		}
	}
	exe := filepath.Join(root, "a/toolshed")
	rel, _ := filepath.Rel(elsewhere, catalogDir)
	for _, spelling := range []string{catalogDir, catalogDir + "/", catalogDir + "/.", rel, "./" + rel + "/",
		filepath.Join(root, "a/plugin-manifests"), filepath.Join(root, "elsewhere", "..", "catalog")} {
		code, out, errs := runIn(t, elsewhere, exe, env, "call", "--plugins", spelling, "listTables", "{}")
		if code != 0 || !strings.Contains(out, "customers") {
			t.Fatalf("--plugins %s: exit %d %s%s", spelling, code, out, errs)
		}
		code, out, errs = runIn(t, elsewhere, exe, append(env, "TOOLSHED_PLUGINS="+spelling), "call", "listTables", "{}")
		if code != 0 || !strings.Contains(out, "customers") {
			t.Fatalf("TOOLSHED_PLUGINS=%s: exit %d %s%s", spelling, code, out, errs)
		}
	}
	// A binary with no catalog anywhere says where it looked.
	lone := filepath.Join(root, "d/bin/toolshed")
	os.MkdirAll(filepath.Dir(lone), 0o755)
	data, _ := os.ReadFile(bin)
	os.WriteFile(lone, data, 0o755)
	code, _, errs := runIn(t, elsewhere, lone, env, "search", "天气")
	for _, want := range []string{filepath.Join(root, "d/bin/plugin-manifests"), filepath.Join(root, "d/plugin-manifests"),
		filepath.Join(root, "d/share/toolshed/plugin-manifests"), filepath.Join(elsewhere, "plugin-manifests"), "--plugins"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Fatalf("no catalog: exit %d, want the error to name %s: %s", code, want, errs)
		}
	}
	// A folder given that does not exist is named, absolute.
	code, _, errs = runIn(t, elsewhere, exe, env, "search", "--plugins", "nope", "x")
	if code != 1 || !strings.Contains(errs, filepath.Join(elsewhere, "nope")) {
		t.Fatalf("missing folder: exit %d %s", code, errs)
	}
}

// TestDocumentedMCPConfig runs the MCP client configuration of
// docs/SERVING.md as written (with the paths filled in), started from /
// as desktop clients do, and calls a bundled tool that needs its grants.
func TestDocumentedMCPConfig(t *testing.T) {
	bin := builtBinary(t)
	root := t.TempDir()
	catalogDir := filepath.Join(root, "plugin-manifests")
	installedCatalog(t, catalogDir)
	doc, err := os.ReadFile("../../docs/SERVING.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```json\n(\\{\\s*\"mcpServers\".*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/SERVING.md has no mcpServers block")
	}
	text := strings.NewReplacer("/path/to/bin/toolshed", bin, "/path/to/plugin-manifests", catalogDir).Replace(string(block[1]))
	var cfg struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("the documented configuration: %v\n%s", err, text)
	}
	server, ok := cfg.MCPServers["toolshed"]
	if !ok || server.Command != bin {
		t.Fatalf("the documented configuration: %+v", cfg)
	}
	cmd := exec.Command(server.Command, server.Args...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(root, "data"), "TOOLSHED_PLUGINS_CACHE_DIR="+testCacheDir,
		"TOOLSHED_PLUGINS=", "TOOLSHED_CONFIG=")
	for k, v := range server.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, changed := mcpClient(t, &mcp.CommandTransport{Command: cmd}, "")
	if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "list the database tables"}); isErr || !strings.Contains(text, "listTables") {
		t.Fatalf("tool_search: %q (stderr: %s)", text, stderr.String())
	}
	select {
	case <-changed:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("no notifications/tools/list_changed")
	}
	text, isErr := callText(t, cs, "listTables", map[string]any{})
	if isErr || !strings.Contains(text, "customers") {
		t.Fatalf("listTables: %q (stderr: %s)", text, stderr.String())
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v (stderr: %s)", err, stderr.String())
	}
}

// TestDocumentedGrants: the grants file of docs/RUNTIME.md works as
// written, saved as grants.json beside a plugin-manifests folder (the
// repository root's layout).
func TestDocumentedGrants(t *testing.T) {
	doc, err := os.ReadFile("../../docs/RUNTIME.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)Saved as `grants.json` at the repository root.*?```json\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/RUNTIME.md has no grants example")
	}
	root := t.TempDir()
	catalogDir := filepath.Join(root, "plugin-manifests")
	installedCatalog(t, catalogDir)
	copyUnits(t, catalogDir, wasmbuild.Bundled(t, "../..", "glossary"))
	os.Remove(filepath.Join(catalogDir, "_grants.json")) // only the documented file grants
	grants := filepath.Join(root, "grants.json")
	if err := os.WriteFile(grants, block[1], 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(root, "data"))
	code, out, errs := runCLI("call", "--plugins", catalogDir, "--grants", grants, "--cache-dir=off", "lookupGlossary", `{"term": "GMV"}`)
	if code != 0 || !strings.Contains(out, "GMV") {
		t.Fatalf("lookupGlossary with the documented grants: exit %d %s%s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--plugins", catalogDir, "--grants", grants, "--cache-dir=off", "listTables", `{}`)
	if code != 0 || !strings.Contains(out, "customers") {
		t.Fatalf("listTables with the documented grants: exit %d %s%s", code, out, errs)
	}
}
