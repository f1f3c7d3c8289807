// Command chart is the bundled chart plugin: bar, line, pie and scatter
// charts rendered to SVG and stored by the host as artifacts.
package main

import (
	"fmt"

	"github.com/toolshed/toolshed/sdk"
)

type result struct {
	Artifact string `json:"artifact"`
	Kind     string `json:"kind"`
	Series   int    `json:"series"`
	Bytes    int    `json:"bytes"`
}

func handler(kind string) func(Spec) (sdk.Result, error) {
	return func(s Spec) (sdk.Result, error) {
		if err := Check(kind, &s); err != nil {
			return sdk.Errorf("%v", err), nil
		}
		svg := Render(kind, s)
		name := kind + "-chart.svg"
		if s.Title != "" {
			name = s.Title + ".svg"
		}
		saved, err := sdk.SaveArtifact(name, "image/svg+xml", []byte(svg))
		if err != nil {
			return sdk.Result{}, err
		}
		out := result{Artifact: saved.Name, Kind: kind, Series: len(s.Series), Bytes: saved.Size}
		// The host adds how the user can see it (a link, or the image itself).
		return sdk.Result{Content: fmt.Sprintf("The %s chart is stored as artifact %s.", kind, saved.Name), Structured: out}, nil
	}
}

func init() {
	sdk.Handle("createBarChart", handler("bar"))
	sdk.Handle("createLineChart", handler("line"))
	sdk.Handle("createPieChart", handler("pie"))
	sdk.Handle("createScatterChart", handler("scatter"))
}

func main() {}
