package main

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

func TestGlossary(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/glossary.json",
		Grants: wasm.Grants{Mounts: map[string]string{"glossary": "../../plugin-manifests/glossary-data"}}})
	for term, want := range map[string]string{"复购率": "Share of buyers", "gmv": "Gross merchandise value",
		"Repurchase Rate": "复购率", "日活": "DAU", "AOV": "客单价"} {
		res := p.Call("lookupGlossary", map[string]any{"term": term})
		if res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %+v", term, res)
		}
	}
	res := p.Call("lookupGlossary", map[string]any{"term": "EBITDA"})
	if !res.IsError || !strings.Contains(res.Content, "not in the glossary") || !strings.Contains(res.Content, "GMV") {
		t.Errorf("unknown: %+v", res)
	}
	denied := plugintest.New(t, plugintest.Config{Dir: ".", Manifest: "../../plugin-manifests/glossary.json"})
	if res := denied.Call("lookupGlossary", map[string]any{"term": "GMV"}); !res.IsError || !strings.Contains(res.Content, "not granted") {
		t.Errorf("no mount: %+v", res)
	}
}
