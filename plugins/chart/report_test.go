package main

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

var report = flag.Bool("report", false, "print the chart timing report")

// TestChartReport times a 1,000-point line chart, rendered natively and
// through the plugin (render + artifact write), in one run:
//
//	go test -run ChartReport -v ./plugins/chart -args -report
func TestChartReport(t *testing.T) {
	if !*report {
		t.Skip("pass -args -report")
	}
	labels := make([]string, 1000)
	values := make([]float64, 1000)
	for i := range labels {
		labels[i], values[i] = fmt.Sprint(i), float64(i%97)*1.5
	}
	spec := Spec{Labels: labels, Series: []Series{{Name: "n", Values: values}}}
	native := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Render("line", spec)
		}
	})
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/chart.json",
		Grants: wasm.Grants{Artifacts: t.TempDir()}})
	args := map[string]any{"labels": labels, "series": []map[string]any{{"name": "n", "values": values}}}
	p.Call("createLineChart", args)
	plugin := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if res := p.Call("createLineChart", args); res.IsError {
				b.Fatal(res.Content)
			}
		}
	})
	fmt.Printf("\n1,000-point line chart, one run:\n  render only, native Go: %s\n  through the plugin (arguments, render, artifact write): %s\n",
		time.Duration(native.NsPerOp()).Round(time.Microsecond), time.Duration(plugin.NsPerOp()).Round(time.Microsecond))
}
