package names_test

import (
	"sort"
	"testing"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/internal/names"
)

// TestAlwaysOnMatchesBuiltin keeps names.AlwaysOn in step with the tools
// host/builtin makes: every constructor is called here, so a new built-in
// must be added both to this test and to the list.
func TestAlwaysOnMatchesBuiltin(t *testing.T) {
	dir := t.TempDir()
	tools := []host.GoTool{builtin.CurrentTime(nil), builtin.Todo(), builtin.Shell(dir, 0, 0)}
	ws, err := builtin.Workspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := builtin.Skills(dir)
	if err != nil {
		t.Fatal(err)
	}
	tools = append(append(tools, ws...), sk)
	var got []string
	for _, tl := range tools {
		got = append(got, tl.Name)
	}
	sort.Strings(got)
	want := names.AlwaysOn()
	if len(got) != len(want) {
		t.Fatalf("host/builtin makes %v, names.AlwaysOn is %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("host/builtin makes %v, names.AlwaysOn is %v", got, want)
		}
	}
}
