package catalog

import (
	"os"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/manifest"
)

// TestBundledCatalog checks the bundled manifests and the article's own
// examples: each must find the intended tool in the top 3.
func TestBundledCatalog(t *testing.T) {
	s, err := Load("../../plugin-manifests", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Errors) > 0 {
		t.Fatalf("bundled manifests fail: %v", s.Errors)
	}
	for _, want := range []string{"listTables", "describeTables", "validateSql", "executeSql", "calculate",
		"createBarChart", "createLineChart", "createPieChart", "createScatterChart", "lookupGlossary",
		"getCurrentWeather", "getWeatherForecast"} {
		if _, ok := s.Tool(want); !ok {
			t.Errorf("bundled catalog lacks %s", want)
		}
	}
	cases := []struct {
		q    string
		want []string // any of them in the top 3
	}{
		{"查天气", []string{"getCurrentWeather", "getWeatherForecast"}},
		{"生成图表", []string{"createBarChart", "createLineChart", "createPieChart", "createScatterChart"}},
		{"查表结构", []string{"describeTables"}},
		{"查詢表結構", []string{"describeTables"}},
		{"数据库里有哪些表", []string{"listTables"}},
		{"帮我执行这条SQL", []string{"executeSql"}},
		{"这条SQL对不对", []string{"validateSql"}},
		{"算一下同比增长率", []string{"calculate"}},
		{"复购率是什么意思", []string{"lookupGlossary"}},
		{"明天会下雨吗", []string{"getWeatherForecast"}},
		{"draw a line chart of monthly revenue", []string{"createLineChart"}},
		{"what columns does the orders table have", []string{"describeTables"}},
		{"pie chart of market share", []string{"createPieChart"}},
	}
	for _, c := range cases {
		r, err := s.Search(c.q, 3)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, h := range r.Hits {
			for _, w := range c.want {
				ok = ok || h.Name == w
			}
		}
		if !ok {
			t.Errorf("%q: top 3 = %v, want one of %v", c.q, r.Hits, c.want)
		}
	}
}

// TestManifestDocExample keeps the example in docs/MANIFEST.md valid.
func TestManifestDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/MANIFEST.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no JSON example in docs/MANIFEST.md")
	}
	m, err := manifest.Decode([]byte(block))
	if err != nil {
		t.Fatalf("the documented example is invalid: %v", err)
	}
	if m.Name != "weather" || len(m.Tools) != 1 {
		t.Fatalf("example decoded to %+v", m)
	}
}
