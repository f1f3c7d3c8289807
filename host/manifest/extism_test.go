package manifest

import (
	"strings"
	"testing"
)

// extismManifest is baseManifest as an Extism plugin: "abi" in place of
// abi_version, each tool naming its export; f edits it further.
func extismManifest(f func(m obj)) []byte {
	return edit(func(m obj) {
		delete(m, "abi_version")
		m["abi"] = ABIExtism
		tool(m, 0)["export"] = "count_vowels"
		tool(m, 0)["input"] = "text:q"
		tool(m, 0)["parameters"] = obj{"type": "object", "properties": obj{"q": obj{"type": "string"}}, "required": []any{"q"}}
		tool(m, 1)["export"] = "run_test"
		if f != nil {
			f(m)
		}
	})
}

func TestExtismManifest(t *testing.T) {
	m, err := Decode(extismManifest(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !m.IsExtism() || m.Tools[0].Export != "count_vowels" || m.ExtismExport(m.Tools[1]) != "run_test" {
		t.Fatalf("%+v", m)
	}
	if f, ok := m.Tools[0].TextField(); !ok || f != "q" {
		t.Fatalf("TextField = %q, %v", f, ok)
	}
	if _, ok := m.Tools[1].TextField(); ok {
		t.Fatal("a json tool has a text field")
	}
	servlet, err := Decode(extismManifest(func(m obj) {
		m["servlet"] = true
		for i := range 2 {
			delete(tool(m, i), "export")
			delete(tool(m, i), "input")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if servlet.ExtismExport(servlet.Tools[0]) != ServletExport {
		t.Fatalf("a servlet's tool runs %q", servlet.ExtismExport(servlet.Tools[0]))
	}
}

func TestExtismManifestErrors(t *testing.T) {
	for _, c := range []struct {
		name, field, reason string
		in                  []byte
	}{
		{"abi and abi_version", "abi_version", "has no abi_version", extismManifest(func(m obj) { m["abi_version"] = 1 })},
		{"unknown abi", "abi", `"wasi" is not an ABI this host speaks`, extismManifest(func(m obj) { m["abi"] = "wasi" })},
		{"abi not a string", "abi", "want a string", extismManifest(func(m obj) { m["abi"] = 1 })},
		{"no abi at all", "abi_version", "ABI version 0 is not supported", edit(func(m obj) { delete(m, "abi_version") })},
		{"servlet of the Toolshed ABI", "servlet", "only an Extism plugin can be a servlet", set("servlet", true)},
		{"export of the Toolshed ABI", "tools[0].export", "only the tools of an Extism plugin", setTool(0, "export", "x")},
		{"input of the Toolshed ABI", "tools[0].input", "only the tools of an Extism plugin", setTool(0, "input", "json")},
		{"missing export", "tools[1].export", "missing; name the module's export", extismManifest(func(m obj) { delete(tool(m, 1), "export") })},
		{"start as export", "tools[1].export", "initialises the module", extismManifest(func(m obj) { tool(m, 1)["export"] = "_start" })},
		{"bad export name", "tools[1].export", "is not an export name", extismManifest(func(m obj) { tool(m, 1)["export"] = "run test" })},
		{"long export", "tools[1].export", "longer than 128 bytes", extismManifest(func(m obj) { tool(m, 1)["export"] = strings.Repeat("x", 129) })},
		{"bad input", "tools[1].input", `"xml": want "json"`, extismManifest(func(m obj) { tool(m, 1)["input"] = "xml" })},
		{"text of an undeclared field", "tools[1].input", `the parameters must declare "body"`, extismManifest(func(m obj) { tool(m, 1)["input"] = "text:body" })},
		{"text of a number", "tools[0].input", `parameter "q" must be {"type": "string"}`, extismManifest(func(m obj) {
			tool(m, 0)["parameters"] = obj{"type": "object", "properties": obj{"q": obj{"type": "integer"}}, "required": []any{"q"}}
		})},
		{"text of an optional field", "tools[0].input", `parameter "q" must be required`, extismManifest(func(m obj) {
			tool(m, 0)["parameters"] = obj{"type": "object", "properties": obj{"q": obj{"type": "string"}}}
		})},
		{"servlet tool with another export", "tools[1].export", "a servlet's tools all run its \"call\" export", extismManifest(func(m obj) { m["servlet"] = true; delete(tool(m, 0), "input") })},
		{"servlet tool with input", "tools[0].input", "a servlet's tools receive MCP call parameters", extismManifest(func(m obj) { m["servlet"] = true; delete(tool(m, 1), "export"); delete(tool(m, 0), "export") })},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.in)
			es, ok := err.(Errors)
			if !ok {
				t.Fatalf("error %v, want Errors", err)
			}
			for _, e := range es {
				if e.Field == c.field && strings.Contains(e.Reason, c.reason) {
					return
				}
			}
			t.Fatalf("errors %v; want %s: …%s…", es, c.field, c.reason)
		})
	}
}
