package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
)

// TestExtismReference sends the same inputs to go-sdk's prebuilt plugins
// through Extism's own Go runtime (testdata/extism/reference, a module of
// its own that requires github.com/extism/go-sdk v1.7.1) and through
// Toolshed, and expects the same outputs, errors and return codes. The
// cases are those where Toolshed is not stricter on purpose (a sleep past
// the deadline, http without a grant, files: TestExtismGoSDKSuite). It is
// skipped when go-sdk's module cannot be had.
func TestExtismReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Extism's runtime")
	}
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "extismreference")
	build := exec.Command("go", "build", "-o", ref, ".")
	build.Dir = "testdata/extism/reference"
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("Extism's go-sdk runtime cannot be built here: %v\n%s", err, out)
	}
	type refCase struct {
		name, wasm, fn string
		textInput      bool // the Toolshed tool takes {"text": input} as "text:text"
		inputs         []string
		config         map[string]string
	}
	cases := []refCase{
		{name: "vowels", wasm: "count_vowels.wasm", fn: "count_vowels", textInput: true, inputs: []string{"Hello World", "aaa", "bbba", "", "ÆØÅ aeiou"}},
		{name: "hello", wasm: "hello.wasm", fn: "run_test", inputs: []string{"", ""}},
		{name: "fail", wasm: "fail.wasm", fn: "run_test", inputs: []string{""}},
		{name: "offset", wasm: "input_offset.wasm", fn: "input_offset_length", textInput: true, inputs: []string{"hello world", "x"}},
		{name: "config", wasm: "config.wasm", fn: "run_test", inputs: []string{""}, config: map[string]string{"thing": "hello"}},
		{name: "noconfig", wasm: "config.wasm", fn: "run_test", inputs: []string{""}},
		{name: "alloc", wasm: "alloc.wasm", fn: "run_test", inputs: []string{""}},
	}
	type wire struct {
		Wasm   string            `json:"wasm"`
		Func   string            `json:"func"`
		Inputs []string          `json:"inputs"`
		Config map[string]string `json:"config"`
	}
	var req []wire
	var plugins []extismPlugin
	grants := map[string]wasm.Grants{}
	for _, c := range cases {
		code := gosdkWasm(t, c.wasm)
		path := filepath.Join(tmp, c.name+".wasm")
		if err := os.WriteFile(path, code, 0o644); err != nil {
			t.Fatal(err)
		}
		req = append(req, wire{Wasm: path, Func: c.fn, Inputs: c.inputs, Config: c.config})
		tool := fmt.Sprintf(`[{"name": %q, "description": "reference", "export": %q}]`, c.name, c.fn)
		if c.textInput {
			tool = fmt.Sprintf(`[{"name": %q, "description": "reference", "export": %q, "input": "text:text",
				"parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]`, c.name, c.fn)
		}
		extra := ""
		if c.config != nil {
			extra = `"capabilities": {"config": ["thing"]}`
			grants[c.name] = wasm.Grants{Config: c.config}
		}
		plugins = append(plugins, extismPlugin{name: c.name, module: code, tools: tool, extra: extra})
	}
	in, _ := json.Marshal(req)
	run := exec.Command(ref)
	run.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("the reference run failed: %v\n%s", err, stderr.String())
	}
	var want [][]struct {
		RC            uint32
		Output, Error string
	}
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(cases) {
		t.Fatalf("the reference answered %s (%v)", out, err)
	}

	snap := writeExtism(t, plugins...)
	h, _ := newHost(t, &wasm.Options{Grants: grants})
	for i, c := range cases {
		s := h.NewSession() // one instance per case, as the reference has one plugin
		for j, input := range c.inputs {
			args := `{}`
			if c.textInput {
				b, _ := json.Marshal(map[string]string{"text": input})
				args = string(b)
			}
			res, err := call(t, s, snap, c.name, args)
			w := want[i][j]
			switch {
			case err != nil:
				t.Errorf("%s(%q): %v; Extism: rc %d %q %q", c.name, input, err, w.RC, w.Output, w.Error)
			case w.RC != 0 || w.Error != "":
				if !res.IsError || res.Content != w.Error {
					t.Errorf("%s(%q) = %+v; Extism: rc %d, error %q", c.name, input, res, w.RC, w.Error)
				}
			case res.IsError || res.Content != w.Output:
				t.Errorf("%s(%q) = %+v; Extism: %q", c.name, input, res, w.Output)
			}
		}
		s.Close(context.Background())
	}
}
