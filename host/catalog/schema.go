package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/search"
)

// SchemaParams lists the parameters a JSON Schema declares, for the search
// index: every property's name and description (with its enum values),
// nested objects and array items included, sorted by path.
func SchemaParams(raw json.RawMessage) []search.Param {
	if len(raw) == 0 {
		return nil
	}
	var root map[string]any
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	var out []search.Param
	var walk func(schema map[string]any, prefix string, depth int)
	walk = func(schema map[string]any, prefix string, depth int) {
		if depth > 4 {
			return
		}
		if items, ok := schema["items"].(map[string]any); ok {
			walk(items, prefix, depth+1)
		}
		props, _ := schema["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, _ := props[k].(map[string]any)
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			desc, _ := p["description"].(string)
			if title, ok := p["title"].(string); ok && title != "" {
				desc = strings.TrimSpace(title + ". " + desc)
			}
			if enum, ok := p["enum"].([]any); ok {
				var vals []string
				for _, v := range enum {
					vals = append(vals, fmt.Sprint(v))
				}
				desc = strings.TrimSpace(desc + " (" + strings.Join(vals, ", ") + ")")
			}
			out = append(out, search.Param{Name: name, Description: desc})
			if p != nil {
				walk(p, name, depth+1)
			}
		}
	}
	walk(root, "", 0)
	return out
}
