package names

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"executeSql": "executesql", "execute_sql": "executesql", "Execute-SQL": "executesql",
		" plugin.tool ": "plugintool", "天气查询": "天气查询", "": "",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSkeleton(t *testing.T) {
	for in, want := range map[string]string{
		"tool_search": "toolsearch", "tooI_search": "toolsearch", "too1-search": "toolsearch", "too|search": "toolsearch",
		"executeSqI": "executesql", "executeSql": "executesql", "EXECUTE_SQL": "executesql",
		"current_time": "currenttirne", "current_tirne": "currenttirne", "CURRENT_TIME": "currenttlrne",
		"todo_write": "toclovvrite", "toclo_vvrite": "toclovvrite", "T0D0_WRITE": "toclovvrlte",
		"id": "icl", "Id": "lcl", "": "",
	} {
		if got := Skeleton(in); got != want {
			t.Errorf("Skeleton(%q) = %q, want %q", in, got, want)
		}
		if Skeleton(Skeleton(in)) != Skeleton(in) {
			t.Errorf("Skeleton is not idempotent on %q", in)
		}
	}
}

func TestClash(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		clash bool
	}{
		{"current_time", "current_time", true},
		{"todo-write", "todo_write", true},
		{"TodoWrite", "todo_write", true},
		{"tooI_search", "tool_search", true},
		{"executeSqI", "executeSql", true},
		{"executeSQL", "execute_sql", true},
		{"readFi1e", "read_file", true},
		{"gr3p", "grep", false},
		{"getld", "getId", true},  // l and I
		{"getid", "getId", true},  // case
		{"getld", "getid", false}, // l and i look different
		{"list_dir", "list_dirs", false},
		{"mail", "mall", false},
		{"rnodel", "model", true},
		{"vvrite", "write", true},
		{"clear", "dear", true},
	} {
		if got := Clash(c.a, c.b); got != c.clash {
			t.Errorf("Clash(%q, %q) = %v, want %v", c.a, c.b, got, c.clash)
		}
		if Clash(c.b, c.a) != Clash(c.a, c.b) {
			t.Errorf("Clash is not symmetric on %q, %q", c.a, c.b)
		}
	}
}

func TestSet(t *testing.T) {
	var s Set[string]
	if _, _, ok := s.Find("x"); ok {
		t.Fatal("the zero Set holds a name")
	}
	for _, n := range Reserved() {
		s.Add(n, "host")
	}
	s.Add("executeSql", "sql")
	for name, want := range map[string]string{
		"current_time": "current_time", "todo-write": "todo_write", "tooI_search": "tool_search",
		"executeSqI": "executeSql", "Shell": "shell", "SKILL": "skill", "gr_ep": "grep",
	} {
		other, _, ok := s.Find(name)
		if !ok || other != want {
			t.Errorf("Find(%q) = %q, %v; want %q", name, other, ok, want)
		}
	}
	if other, v, ok := s.Find("describeTables"); ok {
		t.Errorf("describeTables clashes with %q (%s)", other, v)
	}
}

// TestReservedSorted keeps the list in the order its doc promises.
func TestReservedSorted(t *testing.T) {
	on := AlwaysOn()
	if !sort.StringsAreSorted(on) || len(Reserved()) != len(on)+2 || Reserved()[0] != ToolSearch || Reserved()[1] != CallTool {
		t.Fatalf("AlwaysOn %v, Reserved %v", on, Reserved())
	}
	on[0] = "changed"
	if AlwaysOn()[0] == "changed" {
		t.Fatal("AlwaysOn returns the package's own array")
	}
}

// readNames reads the "name" of every line of a JSON Lines file, or of the
// tools of every manifest matched by a glob.
func readNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%v (the public evaluation sets live beside the repository)", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct{ Name string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec.Name)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func bundledToolNames(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "plugin-manifests", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no plugin-manifests/*.json")
	}
	var out []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tl := range m.Tools {
			out = append(out, tl.Name)
		}
	}
	return out
}

// collisions counts the names of list that clash with an earlier one of the
// list (and are not equal to it), and returns a few of the pairs.
func collisions(list []string) (fold, skel int, pairs [][2]string) {
	var s Set[string]
	seen := map[string]bool{}
	for _, n := range list {
		if seen[n] {
			continue // the same name listed twice is not a look-alike
		}
		seen[n] = true
		if other, _, ok := s.Find(n); ok {
			if Fold(other) == Fold(n) {
				fold++
			} else {
				skel++
				if len(pairs) < 10 {
					pairs = append(pairs, [2]string{other, n})
				}
			}
		}
		s.Add(n, n)
	}
	return fold, skel, pairs
}

// TestRealNamesStayDistinct: the bundled tools, the always-on tools and the
// MetaTool set (199 plugin names from a real plugin store) are pairwise
// distinct under Clash.
func TestRealNamesStayDistinct(t *testing.T) {
	list := append(Reserved(), bundledToolNames(t)...)
	if f, s, pairs := collisions(list); f+s > 0 {
		t.Fatalf("bundled and always-on names clash: %v", pairs)
	}
	meta := readNames(t, filepath.Join("..", "..", "..", "shared", "eval", "metatool", "tools.jsonl"))
	if f, s, pairs := collisions(append(list, meta...)); f+s > 0 {
		t.Fatalf("MetaTool names clash (%d by folding, %d look-alikes): %v", f, s, pairs)
	}
}

// TestSealToolsCollisions counts how many of the 4,076 Seal-Tools names the
// rule would refuse next to the others (docs/MANIFEST.md quotes the count).
func TestSealToolsCollisions(t *testing.T) {
	seal := readNames(t, filepath.Join("..", "..", "..", "shared", "eval", "seal-tools", "tools.jsonl"))
	list := append(Reserved(), seal...)
	f, s, pairs := collisions(list)
	t.Logf("Seal-Tools: %d names; %d clash by folding (case, _ -), %d more are look-alikes: %v", len(seal), f, s, pairs)
	if s > len(seal)/200 {
		t.Errorf("the skeleton refuses %d of %d legitimate names (over 0.5%%)", s, len(seal))
	}
}
