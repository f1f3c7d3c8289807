package main

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/sdk/plugintest"
)

// The plugin runs under the real host: built to WebAssembly, pinned,
// compiled by wazero and called through the ABI.
func TestTextkit(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{
		Dir:      ".",
		Manifest: "../../plugin-manifests/textkit.json",
		Grants:   plugintestGrants,
	})
	res := p.Call("slugify", map[string]any{"text": "Hello, 世界! Tool Search"})
	if res.IsError || res.Content != "hello-世界-tool-search" {
		t.Fatalf("slugify: %+v", res)
	}
	res = p.Call("slugify", map[string]any{"text": "!!!"})
	if !res.IsError || !strings.Contains(res.Content, "no letters") {
		t.Fatalf("slugify of nothing: %+v", res)
	}
	res = p.Call("textStats", map[string]any{"text": "你好 world\nline two"})
	// sdk.JSON writes no content; the model reads the structured text, as
	// it did when the SDK wrote it again as the content string.
	if want := `{"characters":17,"bytes":21,"words":4,"lines":2,"han":2}`; res.IsError || string(res.Structured) != want || res.Content != want {
		t.Fatalf("textStats: %+v %s", res, res.Structured)
	}
	// The host checks arguments against the schema before the plugin runs.
	res = p.Call("slugify", map[string]any{"title": "x"})
	if !res.IsError || !strings.Contains(res.Content, "missing property 'text'") {
		t.Fatalf("bad arguments: %+v", res)
	}
}
