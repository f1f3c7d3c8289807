package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%.500s", err, svg)
		}
	}
}

func TestRender(t *testing.T) {
	s := Spec{Title: "月度销售额 <2025>", Labels: []string{"一月", "二月", "三月"}, XLabel: "月份", YLabel: "销售额 (元)",
		Series: []Series{{Name: "线上", Values: []float64{1200, 3400.5, 2800}}, {Name: "线下", Values: []float64{800, -200, 1500}}}}
	if err := Check("bar", &s); err != nil {
		t.Fatal(err)
	}
	svg := Render("bar", s)
	wellFormed(t, svg)
	for _, want := range []string{"月度销售额 &lt;2025&gt;", "一月", "线下", "销售额 (元)", "Noto Sans CJK SC"} {
		if !strings.Contains(svg, want) {
			t.Errorf("bar chart lacks %q", want)
		}
	}
	if n := strings.Count(svg, `class="bar"`); n != 6 {
		t.Errorf("%d bars, want 6", n)
	}
	for _, kind := range []string{"line", "pie", "scatter"} {
		sp := Spec{Labels: []string{"a", "b", "c"}, Series: []Series{{Name: "s", Values: []float64{1, 2, 3}, Points: [][2]float64{{1, 2}, {3, 4}}}}}
		if err := Check(kind, &sp); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		wellFormed(t, Render(kind, sp))
	}
	for kind, bad := range map[string]Spec{
		"bar":     {Labels: []string{"a"}, Series: []Series{{Values: []float64{1, 2}}}},
		"pie":     {Labels: []string{"a", "b"}, Series: []Series{{Values: []float64{1, -2}}}},
		"scatter": {Series: []Series{{Name: "x"}}},
		"line":    {Labels: []string{"a"}},
	} {
		if err := Check(kind, &bad); err == nil {
			t.Errorf("%s: %+v accepted", kind, bad)
		}
	}
}

// TestChartPlugin runs the tools under the real host and checks the
// stored artifacts; it also times a 1,000-point line chart.
func TestChartPlugin(t *testing.T) {
	dir := t.TempDir()
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/chart.json",
		Grants: wasm.Grants{Artifacts: dir}})
	res := p.Call("createBarChart", map[string]any{"title": "各城市订单数", "labels": []string{"北京", "上海"},
		"series": []map[string]any{{"name": "订单", "values": []float64{120, 95}}}})
	var out result
	if res.IsError || json.Unmarshal(res.Structured, &out) != nil {
		t.Fatalf("%+v", res)
	}
	// The artifact is stored in the granted directory under its id: 32
	// hex digits, then the title as a file name.
	svg, err := os.ReadFile(filepath.Join(dir, out.Artifact))
	if err != nil || !strings.Contains(string(svg), "北京") || !strings.HasSuffix(out.Artifact, "-各城市订单数.svg") || len(out.Artifact) != 33+len("各城市订单数.svg") {
		t.Fatalf("artifact %+v: %v", out, err)
	}
	wellFormed(t, string(svg))

	labels := make([]string, 1000)
	values := make([]float64, 1000)
	for i := range labels {
		labels[i], values[i] = fmt.Sprint(i), float64(i%97)*1.5
	}
	start := time.Now()
	res = p.Call("createLineChart", map[string]any{"labels": labels, "series": []map[string]any{{"name": "n", "values": values}}})
	t.Logf("1,000-point line chart through the plugin: %s", time.Since(start))
	if res.IsError {
		t.Fatalf("%+v", res)
	}
	res = p.Call("createPieChart", map[string]any{"labels": []string{"a", "b"}, "series": []map[string]any{{"name": "x", "values": []float64{1, -1}}}})
	if !res.IsError || !strings.Contains(res.Content, "negative") {
		t.Fatalf("%+v", res)
	}
	denied := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/chart.json"})
	res = denied.Call("createBarChart", map[string]any{"labels": []string{"a"}, "series": []map[string]any{{"name": "x", "values": []float64{1}}}})
	if !res.IsError || !strings.Contains(res.Content, `"artifacts" is not granted`) {
		t.Fatalf("%+v", res)
	}
}

func BenchmarkRender1000(b *testing.B) {
	s := Spec{Labels: make([]string, 1000), Series: []Series{{Name: "n", Values: make([]float64, 1000)}}}
	for i := range s.Labels {
		s.Labels[i], s.Series[0].Values[i] = fmt.Sprint(i), float64(i%97)
	}
	for i := 0; i < b.N; i++ {
		Render("line", s)
	}
}
