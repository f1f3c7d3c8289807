package manifest

import (
	"strings"
	"testing"
)

// withSecondTool puts extra fields into the second tool of baseManifest.
func withSecondTool(extra string) string {
	return strings.Replace(baseManifest, `{"name": "second", "description": "The second tool."}`,
		`{"name": "second", "description": "The second tool.", `+extra+`}`, 1)
}

func TestToolMeta(t *testing.T) {
	m, err := Decode([]byte(withSecondTool(`"title": "Second tool",
		"annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false},
		"outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`)))
	if err != nil {
		t.Fatal(err)
	}
	tl := m.Tools[1]
	a := tl.Annotations
	if tl.Title != "Second tool" || a == nil || !*a.ReadOnlyHint || !*a.IdempotentHint || *a.OpenWorldHint || a.DestructiveHint != nil ||
		!strings.Contains(string(tl.OutputSchema), `"required"`) {
		t.Fatalf("decoded %+v", tl)
	}
	for _, c := range []struct{ extra, want string }{
		{`"title": "` + strings.Repeat("t", MaxTitleBytes+1) + `"`, "tools[1].title: longer than 128 bytes"},
		{`"title": "  "`, "tools[1].title: blank"},
		{`"title": "two\nlines"`, "tools[1].title: one line"},
		{`"title": 3`, "tools[1].title"},
		{`"annotations": {"readOnlyHint": true, "destructiveHint": true}`, "tools[1].annotations.destructiveHint: true contradicts readOnlyHint"},
		{`"annotations": {"readonlyHint": true}`, "readonlyHint"},
		{`"annotations": {"openWorldHint": "yes"}`, "openWorldHint"},
		{`"annotations": []`, "annotations"},
		{`"outputSchema": {"type": "array"}`, "tools[1].outputSchema: the top level must be"},
		{`"outputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}}`, "tools[1].outputSchema: not a valid JSON Schema"},
		{`"outputSchema": {"type": "object", "$ref": "https://example.com/s.json"}`, "tools[1].outputSchema: not a valid JSON Schema"},
		{`"outputSchema": null`, "tools[1].outputSchema"},
		{`"outputSchema": "object"`, "tools[1].outputSchema"},
		{`"output_schema": {"type": "object"}`, "output_schema"},
	} {
		_, err := Decode([]byte(withSecondTool(c.extra)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want %q)", c.extra, err, c.want)
		}
	}
}
