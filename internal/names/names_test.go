package names

import "testing"

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
