package manifest

import (
	"errors"
	"strings"
	"testing"
)

// TestToolNamesReservedAndLookAlikes: a tool may not take an always-on
// tool's name, tool_search, or a name that folds or looks like one, nor one
// that clashes with another tool of the same manifest (issue 13, class 13).
func TestToolNamesReservedAndLookAlikes(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"current_time", `"current_time" is reserved by the host`},
		{"todo-write", `differs from "todo_write" only in case`},
		{"TodoWrite", `differs from "todo_write" only in case`},
		{"tooI_search", `it looks like "tool_search"`},
		{"current_tirne", `it looks like "current_time"`},
		{"read_fi1e", `it looks like "read_file"`},
		{"Shell", "reserved by the host"},
		{"gr_ep", "reserved by the host"},
	} {
		_, err := Decode(setTool(0, "name", c.name))
		es := fieldErrors(t, err)
		if es[0].Field != "tools[0].name" || !strings.Contains(es[0].Reason, c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ a, b, want string }{
		{"executeSql", "executeSqI", `clashes with tool "executeSql" of this manifest (it looks like`},
		{"execute_sql", "ExecuteSQL", `clashes with tool "execute_sql" of this manifest (it differs`},
		{"getModel", "getRnodel", `it looks like "getModel"`},
	} {
		_, err := Decode(edit(func(m obj) { tool(m, 0)["name"], tool(m, 1)["name"] = c.a, c.b }))
		es := fieldErrors(t, err)
		if es[0].Field != "tools[1].name" || !strings.Contains(es[0].Reason, c.want) {
			t.Errorf("%s/%s: %v, want %q", c.a, c.b, err, c.want)
		}
	}
	// Near but distinct names stay valid.
	for _, n := range []string{"current_times", "todo_writer", "tool_searcher", "readFiles", "getid"} {
		if _, err := Decode(setTool(0, "name", n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestNotRegularErrorMessage(t *testing.T) {
	var e error = &NotRegularError{}
	if !strings.Contains(e.Error(), "not a regular file") || !errors.As(e, new(*NotRegularError)) {
		t.Fatal(e)
	}
}
