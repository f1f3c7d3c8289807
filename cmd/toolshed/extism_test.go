package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/extismtest"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// writeExtismPlugin writes NAME.wasm and NAME.json (an Extism plugin's
// manifest with the given tools) into dir.
func writeExtismPlugin(t *testing.T, dir, name string, module []byte, tools []map[string]any, extra map[string]any) {
	t.Helper()
	sum := sha256.Sum256(module)
	if err := os.WriteFile(filepath.Join(dir, name+".wasm"), module, 0o644); err != nil {
		t.Fatal(err)
	}
	m := map[string]any{"name": name, "version": "1.0.0", "abi": "extism", "wasm": name + ".wasm",
		"sha256": hex.EncodeToString(sum[:]), "tools": tools}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// extismFolder is the folder of the "done when": go-sdk's
// count_vowels, hello and fail plugins with their manifests.
func extismFolder(t *testing.T) string {
	dir := t.TempDir()
	writeExtismPlugin(t, dir, "vowels", extismtest.Wasm(t, "count_vowels.wasm"), []map[string]any{{
		"name": "countVowels", "description": "Count the vowels in a piece of text.", "export": "count_vowels", "input": "text:text",
		"parameters": map[string]any{"type": "object", "required": []string{"text"},
			"properties": map[string]any{"text": map[string]any{"type": "string", "description": "the text"}}},
	}}, nil)
	writeExtismPlugin(t, dir, "hello", extismtest.Wasm(t, "hello.wasm"), []map[string]any{{
		"name": "helloWorld", "description": "Greet the whole planet with a hello.", "export": "run_test"}}, nil)
	writeExtismPlugin(t, dir, "fail", extismtest.Wasm(t, "fail.wasm"), []map[string]any{{
		"name": "alwaysFails", "description": "A tool that always reports a failure.", "export": "run_test"}}, nil)
	return dir
}

// TestExtismDoneWhen runs the "done when" through the CLI:
// toolshed call on go-sdk's own plugins, search finding them, validate
// passing them.
func TestExtismDoneWhen(t *testing.T) {
	dir := extismFolder(t)
	cache := "--cache-dir=" + filepath.Join(t.TempDir(), "cache")
	code, out, errs := runCLI("call", "--plugins", dir, cache, "countVowels", `{"text":"Hello World"}`)
	if code != 0 || !strings.Contains(out, `"count":3`) {
		t.Fatalf("countVowels: exit %d %q %s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--plugins", dir, cache, "helloWorld", `{}`)
	if code != 0 || out != "Hello, world!\n" {
		t.Fatalf("helloWorld: exit %d %q %s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--plugins", dir, cache, "alwaysFails", `{}`)
	if code != 3 || !strings.Contains(out+errs, "Some error message") {
		t.Fatalf("alwaysFails: exit %d %q %q; want exit 3 with the plugin's message", code, out, errs)
	}
	for q, want := range map[string]string{"count vowels in text": "countVowels", "greet the planet": "helloWorld"} {
		code, out, errs = runCLI("search", "--plugins", dir, q)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("search %q: exit %d %q %s; want %s", q, code, out, errs, want)
		}
	}
	for _, args := range [][]string{{"plugins", "validate", dir}, {"plugins", "validate", "--compile", dir}} {
		if code, out, errs := runCLI(args...); code != 0 || !strings.Contains(out, "3 manifests, 3 tools: all valid") {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// TestExtismValidateRefuses: validate names what is wrong with an Extism
// plugin: an export the module lacks, a manifest of the wrong ABI, a host
// function the host does not provide.
func TestExtismValidateRefuses(t *testing.T) {
	hello := extismtest.Wasm(t, "hello.wasm")
	for _, c := range []struct {
		name   string
		module []byte
		tools  []map[string]any
		extra  map[string]any
		want   string
	}{
		{"noexport", hello, []map[string]any{{"name": "x", "description": "d", "export": "nope"}}, nil,
			`module does not export the function "nope" (its plugin functions: run_test)`},
		{"wrongabi", hello, []map[string]any{{"name": "x", "description": "d"}}, map[string]any{"abi": nil, "abi_version": 1},
			`it is an Extism plugin; its manifest must say "abi": "extism"`},
		{"userfn", extismWAT(t, `(import "extism:host/user" "secret" (func (param i64) (result i64)))`, ""),
			[]map[string]any{{"name": "x", "description": "d", "export": "run"}}, nil,
			"Extism host functions of the plugin's own are not provided"},
		{"badsig", extismWAT(t, `(import "extism:host/env" "alloc" (func (param i32) (result i32)))`, ""),
			[]map[string]any{{"name": "x", "description": "d", "export": "run"}}, nil,
			"extism:host/env.alloc with the wrong signature (the host's is (i64) -> i64)"},
		{"unknownfn", extismWAT(t, `(import "extism:host/env" "launch_missiles" (func))`, ""),
			[]map[string]any{{"name": "x", "description": "d", "export": "run"}}, nil,
			"extism:host/env.launch_missiles, which this host does not provide"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			extra := map[string]any{}
			for k, v := range c.extra {
				if v != nil {
					extra[k] = v
				}
			}
			writeExtismPlugin(t, dir, c.name, c.module, c.tools, extra)
			if _, ok := c.extra["abi"]; ok {
				// Drop "abi": the manifest claims the Toolshed ABI.
				path := filepath.Join(dir, c.name+".json")
				var m map[string]any
				b, _ := os.ReadFile(path)
				json.Unmarshal(b, &m)
				delete(m, "abi")
				b, _ = json.Marshal(m)
				os.WriteFile(path, b, 0o644)
			}
			for _, args := range [][]string{{"plugins", "validate", dir}, {"plugins", "validate", "--compile", dir}} {
				code, out, errs := runCLI(args...)
				if code != 1 || !strings.Contains(out+errs, c.want) {
					t.Fatalf("%v: exit %d\n%s%s\nwant %q", args, code, out, errs, c.want)
				}
			}
		})
	}
}

// extismWAT builds a small Extism module: imports, a "run" export
// (() -> i32) with body (default: return 0), a memory.
func extismWAT(t *testing.T, imports, body string) []byte {
	t.Helper()
	if body == "" {
		body = "(i32.const 0)"
	}
	return wat(t, "(module "+imports+` (memory (export "memory") 1) (func (export "run") (result i32) `+body+"))")
}

// goExtismModule builds host/wasm's Go fixture of the Extism ABI, which
// is also an mcp.run servlet (describe, call).
func goExtismModule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(wasmbuild.Build(t, "../../host/wasm/testdata/extism/goplugin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExtismImportServlet: plugins import --extism --servlet writes the
// manifest from the servlet's describe; its tools are called through the
// CLI (text, isError, an image as an artifact or left out) and over MCP.
func TestExtismImportServlet(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "My Servlet.wasm")
	if err := os.WriteFile(mod, goExtismModule(t), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("plugins", "import", "--extism", "--servlet", mod)
	if code != 0 || !strings.Contains(out, "my-servlet.json (3 tools)") {
		t.Fatalf("import: exit %d %s%s", code, out, errs)
	}
	if code, _, errs := runCLI("plugins", "import", "--extism", "--servlet", mod); code != 1 || !strings.Contains(errs, "exists (--force overwrites it)") {
		t.Fatalf("second import: exit %d %s", code, errs)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "my-servlet.json"))
	for _, want := range []string{`"servlet": true`, `"abi": "extism"`, `"name": "shout"`, `"description": "Shout a message back in capitals."`,
		`"wasm": "My Servlet.wasm"`, `"title": "Shout"`, `"readOnlyHint": true`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("manifest lacks %s:\n%s", want, b)
		}
	}
	if code, out, errs := runCLI("plugins", "validate", "--compile", dir); code != 0 {
		t.Fatalf("validate: exit %d %s%s", code, out, errs)
	}
	cache := "--cache-dir=" + filepath.Join(t.TempDir(), "cache")
	if code, out, errs := runCLI("call", "--plugins", dir, cache, "shout", `{"message": "quiet please"}`); code != 0 || out != "QUIET PLEASE\n" {
		t.Fatalf("shout: exit %d %q %s", code, out, errs)
	}
	if code, out, errs := runCLI("call", "--plugins", dir, cache, "grumpy", `{}`); code != 3 || !strings.Contains(out+errs, "no") {
		t.Fatalf("grumpy: exit %d %q %s; want the servlet's isError as exit 3", code, out, errs)
	}
	code, out, errs = runCLI("call", "--plugins", dir, cache, "picture", `{}`)
	if code != 0 || !strings.Contains(out, "here it is") || !strings.Contains(out, `capability \"artifacts\" is not granted`) && !strings.Contains(out, `capability "artifacts" is not granted`) {
		t.Fatalf("picture, no artifacts granted: exit %d %q %s", code, out, errs)
	}
	grants := filepath.Join(t.TempDir(), "grants.json")
	b, _ = os.ReadFile(filepath.Join(dir, "my-servlet.json"))
	b = []byte(strings.Replace(string(b), `"capabilities": {}`, `"capabilities": {"artifacts": true}`, 1))
	os.WriteFile(filepath.Join(dir, "my-servlet.json"), b, 0o644)
	pictures, _ := json.Marshal(filepath.Join(t.TempDir(), "pictures")) // never the package folder
	os.WriteFile(grants, []byte(`{"plugins": {"my-servlet": {"artifacts": `+string(pictures)+`}}}`), 0o644)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	code, out, errs = runCLI("call", "--plugins", dir, cache, "--grants", grants, "picture", `{}`)
	if code != 0 || !strings.Contains(out, "stored as artifact") {
		t.Fatalf("picture, artifacts granted: exit %d %q %s", code, out, errs)
	}

	// Over MCP: found by tool_search, called.
	t.Setenv("TOOLSHED_PLUGINS_CACHE_DIR", testCacheDir)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stdin = inR
	defer func() { stdin = strings.NewReader("") }()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		code := run([]string{"mcp", "--plugins", dir, "--no-time", "--no-todo"}, outW, &errb)
		outW.Close()
		done <- code
	}()
	cs, changed := mcpClient(t, &mcp.IOTransport{Reader: outR, Writer: inW}, "")
	if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "shout a message in capitals"}); isErr || !strings.Contains(text, "shout") {
		t.Fatalf("tool_search: %q", text)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("no notifications/tools/list_changed")
	}
	if text, isErr := callText(t, cs, "shout", map[string]any{"message": "over mcp"}); isErr || text != "OVER MCP" {
		t.Fatalf("shout over MCP: %q %v", text, isErr)
	}
	if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "refuse whatever is asked"}); isErr || !strings.Contains(text, "grumpy") {
		t.Fatalf("tool_search: %q", text)
	}
	if text, isErr := callText(t, cs, "grumpy", map[string]any{}); !isErr || text != "no" {
		t.Fatalf("grumpy over MCP: %q %v", text, isErr)
	}
	cs.Close()
	inW.Close()
	select {
	case <-done:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("toolshed mcp did not end when the client left")
	}
}

// TestExtismImportPlain: a plain plugin's import is a stub listing its
// functions, which validation refuses until the descriptions are there.
func TestExtismImportPlain(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "hello.wasm")
	os.WriteFile(mod, extismtest.Wasm(t, "hello.wasm"), 0o644)
	code, out, errs := runCLI("plugins", "import", "--extism", mod)
	if code != 0 || !strings.Contains(out, "hello.json (1 tool)") || !strings.Contains(out, "fill in each tool's description") {
		t.Fatalf("import: exit %d %s%s", code, out, errs)
	}
	code, out, _ = runCLI("plugins", "validate", dir)
	if code != 1 || !strings.Contains(out, "tools[0].description: missing") {
		t.Fatalf("validate of the stub: exit %d %s", code, out)
	}
	path := filepath.Join(dir, "hello.json")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), `"description": ""`, `"description": "Say hello to the world."`, 1)), 0o644)
	if code, out, errs := runCLI("call", "--plugins", dir, "--cache-dir=off", "run_test", `{}`); code != 0 || out != "Hello, world!\n" {
		t.Fatalf("call after filling in: exit %d %q %s", code, out, errs)
	}
	// Not an Extism module: said so.
	bad := filepath.Join(dir, "plain.wasm")
	os.WriteFile(bad, wat(t, `(module (import "env" "x" (func)) (memory (export "memory") 1))`), 0o644)
	if code, _, errs := runCLI("plugins", "import", "--extism", bad); code != 1 || !strings.Contains(errs, "env.x, which this host does not provide") {
		t.Fatalf("import of a non-Extism module: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI("plugins", "import", mod); code != 1 || !strings.Contains(errs, "--extism") {
		t.Fatalf("import without --extism: exit %d %s", code, errs)
	}
}

// TestExtismImportHostileDescribe: a servlet whose describe never
// returns (stopped at the default 10 s deadline), returns garbage or
// fails makes import fail saying so, and writes no manifest.
func TestExtismImportHostileDescribe(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"loops":   {`(loop $l (br $l)) (i32.const 0)`, "describe: plugin"},
		"garbage": {`(call $out (i64.const 0) (i64.const 0)) (i32.const 0)`, "describe"},
		"fails":   {`(i32.const 3)`, "describe: describe returned 3"},
	} {
		mod := filepath.Join(dir, name+".wasm")
		os.WriteFile(mod, wat(t, `(module
  (import "extism:host/env" "output_set" (func $out (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "call") (result i32) (i32.const 0))
  (func (export "describe") (result i32) `+c.body+`))`), 0o644)
		code, _, errs := runCLI("plugins", "import", "--extism", "--servlet", mod)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d %q; want %q", name, code, errs, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".json")); err == nil {
			t.Errorf("%s: a manifest was written", name)
		}
	}
}
