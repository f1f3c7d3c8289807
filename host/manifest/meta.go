package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// MaxTitleBytes bounds a tool's title.
const MaxTitleBytes = 128

// Annotations are MCP's hints about what a tool does (the tool
// annotations of the MCP specification, under the same names). They are
// hints for clients (whether to ask the user first, whether a retry is
// safe), not guarantees: the sandbox and the operator's grants decide what
// a plugin can do. An absent hint takes MCP's default.
type Annotations struct {
	// ReadOnlyHint: the tool changes nothing in its environment. MCP's
	// default: false.
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: an update may destroy or overwrite (meaningful
	// only when not read-only). MCP's default: true.
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling again with the same arguments has no
	// further effect (meaningful only when not read-only). MCP's default:
	// false.
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool reaches an open world of entities (the
	// web, a weather service), not a closed one (a given database). MCP's
	// default: true.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// checkToolMeta checks what MCP shows of tool p (tools[i]) beside its
// function definition: title, annotations, outputSchema.
func checkToolMeta(p string, t Tool) Errors {
	var es Errors
	bad := func(field, format string, args ...any) {
		es = append(es, &FieldError{Field: p + "." + field, Reason: fmt.Sprintf(format, args...)})
	}
	switch {
	case len(t.Title) > MaxTitleBytes:
		bad("title", "longer than %d bytes", MaxTitleBytes)
	case t.Title != "" && strings.TrimSpace(t.Title) == "":
		bad("title", "blank; leave it out or name the tool for people")
	case strings.IndexFunc(t.Title, unicode.IsControl) >= 0:
		bad("title", "one line without control characters")
	}
	if a := t.Annotations; a != nil {
		if a.ReadOnlyHint != nil && *a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
			bad("annotations.destructiveHint", "true contradicts readOnlyHint true (a read-only tool destroys nothing)")
		}
	}
	if len(t.OutputSchema) > 0 {
		if reason := checkOutputSchema(t.OutputSchema); reason != "" {
			bad("outputSchema", "%s", reason)
		}
	}
	return es
}

// checkOutputSchema is checkSchema for structured results, which MCP
// requires to be JSON objects.
func checkOutputSchema(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return `must be a JSON Schema object ({"type": "object", ...})`
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return "must be a JSON Schema object"
	}
	if ty, _ := top["type"].(string); ty != "object" {
		return `the top level must be {"type": "object", ...}: structured results are JSON objects`
	}
	return checkSchema(raw)
}
