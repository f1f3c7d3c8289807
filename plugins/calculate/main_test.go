package main

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/sdk/plugintest"
)

func TestCalculatePlugin(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/calculate.json"})
	res := p.Call("calculate", map[string]any{"expression": "(1250.5 - 980) / 980 * 100", "precision": 2})
	if res.IsError || res.Content != "(1250.5 - 980) / 980 * 100 = 27.6" || !strings.Contains(string(res.Structured), `"exact":true`) {
		t.Fatalf("%+v %s", res, res.Structured)
	}
	res = p.Call("calculate", map[string]any{"expression": "2 +* 3"})
	if !res.IsError || !strings.Contains(res.Content, "at character") {
		t.Fatalf("%+v", res)
	}
}
