package host_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/host"
	scriptedmodel "github.com/toolshed/toolshed/internal/scripted"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts")

// TestGoldenTranscripts records what goes over the wire in full runs (every
// request's messages and function list) and compares it with
// testdata/golden; go test ./host -run Golden -update rewrites them.
func TestGoldenTranscripts(t *testing.T) {
	for name, prompt := range map[string]string{
		"search-then-call": `use slugify with {"text":"Golden_Transcript"} to url-slug`,
		"undiscovered":     `use textStats with {"text":"x"} to zzzz-nothing`,
		"bad-arguments":    `use slugify with {"title":"x"} to url-slug`,
	} {
		t.Run(name, func(t *testing.T) {
			model := &scripted{}
			h, _ := newHost(t, model, host.Options{})
			ask(t, h, prompt)
			type wireRound struct {
				Tools    []string          `json:"tools"`
				Messages []json.RawMessage `json:"messages"`
			}
			var got []wireRound
			for _, req := range model.Requests() {
				var r wireRound
				r.Tools = scriptedmodel.ToolNames(req)
				for _, m := range req.Messages {
					b, _ := json.Marshal(m)
					r.Messages = append(r.Messages, b)
				}
				got = append(got, r)
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(b)) {
				t.Errorf("transcript differs from %s (run with -update after checking):\n%s", path, b)
			}
		})
	}
}
