package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/extismtest"
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
