package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// TestOutputSchema: a structured result is held to the tool's
// outputSchema; titles, annotations and output schemas stay out of the
// OpenAI function list.
func TestOutputSchema(t *testing.T) {
	dir := wasmbuild.Bundled(t, "..", "textkit")
	path := filepath.Join(dir, "textkit.json")
	man, _ := os.ReadFile(path)
	const req = `"required": ["characters", "bytes", "words", "lines", "han"]`
	if !strings.Contains(string(man), req) {
		t.Fatal("textkit.json declares no outputSchema for textStats")
	}
	load := func(manifest string) *host.Session {
		os.WriteFile(path, []byte(manifest), 0o644)
		snap, err := catalog.Load(dir, nil)
		if err != nil || len(snap.Errors) > 0 {
			t.Fatal(err, snap.Errors)
		}
		rt, err := wasm.New(&wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(context.Background()) })
		h, err := host.New(host.Options{Client: openai.NewClientWithConfig(openai.DefaultConfig("")), Model: "m", Runtime: rt,
			Catalog: func() *catalog.Snapshot { return snap }, AutoDiscover: true})
		if err != nil {
			t.Fatal(err)
		}
		s := h.NewSession()
		t.Cleanup(s.Close)
		return s
	}
	s := load(string(man))
	res, _ := s.Call(context.Background(), "textStats", `{"text":"a b"}`)
	if res.IsError || !strings.Contains(string(res.Structured), `"words":2`) {
		t.Fatalf("conforming result: %+v", res)
	}
	info := s.ToolInfo("textStats")
	if info.Title != "Text statistics" || info.Annotations == nil || !*info.Annotations.ReadOnlyHint || len(info.OutputSchema) == 0 {
		t.Fatalf("ToolInfo: %+v", info)
	}
	b, _ := json.Marshal(s.Tools())
	for _, k := range []string{"outputSchema", "annotations", "readOnlyHint", "Text statistics"} {
		if strings.Contains(string(b), k) {
			t.Fatalf("the OpenAI function list carries %s: %s", k, b)
		}
	}
	// The same plugin under a schema its result breaks.
	s = load(strings.Replace(string(man), req, `"required": ["characters", "bytes", "words", "lines", "han", "sentences"]`, 1))
	res, _ = s.Call(context.Background(), "textStats", `{"text":"a b"}`)
	if !res.IsError || !strings.Contains(res.Content, "does not match its outputSchema") || !strings.Contains(res.Content, "sentences") {
		t.Fatalf("non-conforming result: %+v", res)
	}
	// A tool without an outputSchema is not checked.
	if res, _ := s.Call(context.Background(), "slugify", `{"text":"A B"}`); res.IsError {
		t.Fatalf("slugify: %+v", res)
	}
}
