package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// TestValidateAgreesWithServe: on one folder holding a good plugin, a
// manifest whose module is missing, one whose module does not match its
// sha256, one whose module is not an ABI plugin and a broken manifest,
// "plugins validate" fails exactly the files serve's live catalog leaves
// out, and passes the one it serves.
func TestValidateAgreesWithServe(t *testing.T) {
	dir, module := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	man, _ := os.ReadFile(filepath.Join(dir, "textkit.json"))
	variant := func(name string, module []byte) {
		m := strings.NewReplacer(`"name": "textkit"`, `"name": "`+name+`"`, `"textkit.wasm"`, `"`+name+`.wasm"`,
			`"slugify"`, `"`+name+`Slug"`, `"textStats"`, `"`+name+`Stats"`).Replace(string(man))
		if module != nil {
			sum := sha256.Sum256(module)
			m = regexp.MustCompile(`"sha256": "[0-9a-f]*"`).ReplaceAllString(m, `"sha256": "`+hex.EncodeToString(sum[:])+`"`)
			os.WriteFile(filepath.Join(dir, name+".wasm"), module, 0o644)
		}
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(m), 0o644)
	}
	variant("missing", nil)                                                                   // names missing.wasm, absent
	variant("tampered", module)                                                               // pinned to textkit's bytes...
	os.WriteFile(filepath.Join(dir, "tampered.wasm"), append(slices.Clone(module), 0), 0o644) // ...which differ
	variant("noabi", []byte("\x00asm\x01\x00\x00\x00"))                                       // a valid, empty module
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"name": "broken", "colour": 1}`), 0o644)

	code, out, errs := runCLI("plugins", "validate", dir)
	if code != 1 || !strings.Contains(errs, "4 of 5 files failed") {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	failed := regexp.MustCompile(`(?m)^FAILED  (\S+\.json):`).FindAllStringSubmatch(out, -1)
	var validateFailed []string
	for _, f := range failed {
		validateFailed = append(validateFailed, f[1])
	}
	for _, want := range []string{"module " + filepath.Join(dir, "missing.wasm") + " is missing", "tampered.wasm has sha256",
		"does not export toolshed_abi_version", "colour: unknown field"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate does not say %q:\n%s", want, out)
		}
	}

	live, err := catalog.NewLive(dir, catalog.LiveOptions{Search: admission(nil)}) // as newServer loads it
	if err != nil {
		t.Fatal(err)
	}
	snap := live.Snapshot()
	var serveFailed []string
	for _, e := range snap.Errors {
		serveFailed = append(serveFailed, e.File)
	}
	if !slices.Equal(validateFailed, serveFailed) || len(snap.Plugins) != 1 || snap.Plugins[0].Name() != "textkit" {
		t.Fatalf("validate fails %v, serve leaves out %v and serves %d plugins", validateFailed, serveFailed, len(snap.Plugins))
	}
	if !strings.Contains(out, "ok      "+filepath.Join(dir, "textkit.json")) {
		t.Fatalf("validate does not pass textkit:\n%s", out)
	}
}

// TestValidateCompile: a module with the ABI's exports that no compile
// would take (more functions than the compile budget allows) passes
// "plugins validate", as it passes serve's load, and fails
// "plugins validate --compile", as its first call would under serve.
func TestValidateCompile(t *testing.T) {
	src := `(module (memory (export "memory") 1)
  (func (export "toolshed_abi_version") (result i32) i32.const 1)
  (func (export "toolshed_alloc") (param i32) (result i32) i32.const 0)
  (func (export "toolshed_call") (param i32 i32) (result i64) i64.const 0)` +
		strings.Repeat("(func)", 50001) + ")"
	module := wasmbuild.WAT(t, []byte(src))
	dir := t.TempDir()
	sum := sha256.Sum256(module)
	os.WriteFile(filepath.Join(dir, "big.wasm"), module, 0o644)
	os.WriteFile(filepath.Join(dir, "big.json"), []byte(`{"name": "big", "version": "1.0.0", "abi_version": 1, "wasm": "big.wasm",
  "sha256": "`+hex.EncodeToString(sum[:])+`", "tools": [{"name": "bigTool", "description": "Too big to compile."}]}`), 0o644)
	if code, out, errs := runCLI("plugins", "validate", dir); code != 0 || !strings.Contains(out, "ok      "+filepath.Join(dir, "big.json")) {
		t.Fatalf("validate: exit %d %s%s", code, out, errs)
	}
	code, out, errs := runCLI("plugins", "validate", "--compile", dir)
	if code != 1 || !strings.Contains(out, "FAILED  "+filepath.Join(dir, "big.json")) || !strings.Contains(out, "over the compile budget") {
		t.Fatalf("validate --compile: exit %d %s%s", code, out, errs)
	}
}
