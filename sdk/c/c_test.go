package csdk_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// kit builds testdata/kit.c with the SDK and loads it in a real host.
func kit(t *testing.T, grants wasm.Grants) *plugintest.Plugin {
	t.Helper()
	code := wasmbuild.C(t, "toolshed", "testdata/kit.c")
	if err := wasm.CheckModule(code); err != nil {
		t.Fatalf("the C module fails CheckModule: %v", err)
	}
	return plugintest.New(t, plugintest.Config{Module: writeModule(t, code), Manifest: "testdata/kit.json", Grants: grants})
}

func writeModule(t testing.TB, code []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin.wasm")
	if err := os.WriteFile(path, code, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExampleEcho: the example plugin gives the bytes Go's encoding/json
// gives for the same object, so the benchmark's two echoes do the same
// work.
func TestExampleEcho(t *testing.T) {
	code := wasmbuild.C(t, "toolshed", "examples/echo/echo.c")
	p := plugintest.New(t, plugintest.Config{Module: writeModule(t, code), Manifest: "examples/echo/echo.json"})
	args := `{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}`
	res := p.Call("echo", json.RawMessage(args))
	if res.IsError || string(res.Structured) != args || res.Content != args {
		t.Fatalf("echo: %+v %s", res, res.Structured)
	}
	res = p.Call("echo", map[string]any{"name": "引号\"和\\反斜杠\n", "tags": []string{"é", "\u2028"}})
	var back struct {
		Name  string
		Count int
		Tags  []string
	}
	if err := json.Unmarshal(res.Structured, &back); err != nil || back.Name != "引号\"和\\反斜杠\n" || back.Count != 0 ||
		strings.Join(back.Tags, ",") != "é,\u2028" {
		t.Fatalf("escapes: %s (%v)", res.Structured, err)
	}
}

func TestArguments(t *testing.T) {
	p := kit(t, wasm.Grants{})
	res := p.Call("args", json.RawMessage(`{"s":"a\"b\\c\u00e9\ud83d\ude00\n","n":-42,"x":2.5e3,"b":true,"r":{"k":"v\u0041","z":[1,{"a":"]"}]},"list":[1,"two",[3],{"four":4},null]}`))
	want := `{"s":"a\"b\\cé😀\n","n":-42,"x":2500,"b":true,"r":{"k":"v\u0041","z":[1,{"a":"]"}]},"list":[1,"two",[3],{"four":4},null],"nested":"vA","special":[null,0.5,null,"tab\there \"q\" \\ \u0001"]}`
	if res.IsError || string(res.Structured) != want {
		t.Fatalf("args:\n have %s\n want %s", res.Structured, want)
	}
	// Absent keys, null and the wrong types.
	res = p.Call("args", json.RawMessage(`{"s":7,"n":1.5,"x":"1","b":null,"list":{}}`))
	want = `{"s":"wrong type","n":"wrong type","x":"wrong type","b":"absent","r":"absent","list":"wrong type","nested":null,"special":[null,0.5,null,"tab\there \"q\" \\ \u0001"]}`
	if string(res.Structured) != want {
		t.Fatalf("wrong types:\n have %s\n want %s", res.Structured, want)
	}
	// An integer too large for long long is the wrong type, not a wrap.
	res = p.Call("args", json.RawMessage(`{"n":99999999999999999999}`))
	if !strings.Contains(string(res.Structured), `"n":"wrong type"`) {
		t.Fatalf("overflow: %s", res.Structured)
	}
}

// TestLargeRequest: a request over the 16 KiB request buffer goes through
// toolshed_alloc; calls after it still use the buffer.
func TestLargeRequest(t *testing.T) {
	p := kit(t, wasm.Grants{})
	for _, n := range []int{10, 16 << 10, 200 << 10, 3} {
		res := p.Call("size", map[string]any{"s": strings.Repeat("x", n)})
		if res.IsError || res.Content != itoa(n) {
			t.Fatalf("size %d: %+v", n, res)
		}
	}
}

func TestCapabilities(t *testing.T) {
	denied := kit(t, wasm.Grants{})
	res := denied.Call("caps", map[string]any{})
	var raw map[string]string
	json.Unmarshal(res.Structured, &raw)
	if raw["log"] != "failed" || raw["config"] != "failed" || !strings.Contains(raw["value"], "not granted") || raw["sql"] != "failed" {
		t.Fatalf("nothing granted: %s", res.Structured)
	}
	granted := kit(t, wasm.Grants{Log: true, Config: map[string]string{"kit.greeting": "你好 \"there\""}})
	res = granted.Call("caps", map[string]any{})
	json.Unmarshal(res.Structured, &raw)
	if raw["log"] != "ok" || raw["config"] != "ok" || raw["value"] != "你好 \"there\"" || raw["sql"] != "failed" ||
		!strings.Contains(raw["sql_reason"], `capability "sql" is not granted`) {
		t.Fatalf("log and config granted: %s", res.Structured)
	}
}

func TestToolErrors(t *testing.T) {
	p := kit(t, wasm.Grants{})
	res := p.Call("fail", map[string]any{"n": 7})
	if !res.IsError || res.Content != "no row 7; try 1 to 3" || string(res.Structured) != `{"n":7}` {
		t.Fatalf("fail: %+v %s", res, res.Structured)
	}
	res = p.Call("nothere", map[string]any{})
	if !res.IsError || res.Content != "this plugin has no tool nothere" {
		t.Fatalf("a tool the module lacks: %+v", res)
	}
	// The instance is still good afterwards.
	if res := p.Call("size", map[string]any{"s": "abc"}); res.Content != "3" {
		t.Fatalf("after errors: %+v", res)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
