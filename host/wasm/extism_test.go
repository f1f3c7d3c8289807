package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/extismtest"
)

// gosdkWasm returns one of go-sdk's prebuilt plugins (extismtest.Wasm).
func gosdkWasm(t testing.TB, name string) []byte { return extismtest.Wasm(t, name) }

// extismPlugin is a plugin directory entry of the Extism ABI.
type extismPlugin struct {
	name   string
	module []byte
	tools  string // the "tools" array's JSON
	extra  string // more manifest fields: `"key": value, ...`
}

// writeExtism writes Extism plugins into a directory and loads it.
func writeExtism(t testing.TB, ps ...extismPlugin) *catalog.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for _, p := range ps {
		sum := sha256.Sum256(p.module)
		if p.extra != "" {
			p.extra += ", "
		}
		m := fmt.Sprintf(`{%s"name": %q, "version": "1.0.0", "abi": "extism", "wasm": "%s.wasm", "sha256": %q, "tools": %s}`,
			p.extra, p.name, p.name, hex.EncodeToString(sum[:]), p.tools)
		if err := os.WriteFile(filepath.Join(dir, p.name+".json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.name+".wasm"), p.module, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(dir, &catalog.Options{RequireModules: true, CheckModule: wasm.CheckModule})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Fatal(snap.Errors)
	}
	return snap
}

// runTest is a tool running go-sdk's usual export, run_test.
func runTest(name string) string {
	return fmt.Sprintf(`[{"name": %q, "description": "runs run_test", "export": "run_test"}]`, name)
}

const countVowelsTool = `[{"name": "countVowels", "description": "count the vowels of a text", "export": "count_vowels", "input": "text:text",
	"parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]`

func TestExtismGoSDKPlugins(t *testing.T) {
	snap := writeExtism(t,
		extismPlugin{name: "hello", module: gosdkWasm(t, "hello.wasm"), tools: runTest("hello")},
		extismPlugin{name: "fail", module: gosdkWasm(t, "fail.wasm"), tools: runTest("fail")},
		extismPlugin{name: "alloc", module: gosdkWasm(t, "alloc.wasm"), tools: runTest("alloc")},
		extismPlugin{name: "offset", module: gosdkWasm(t, "input_offset.wasm"),
			tools: `[{"name": "offset", "description": "input length", "export": "input_offset_length"}]`},
	)
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())

	res, err := call(t, s, snap, "hello", `{}`)
	if err != nil || res.IsError || res.Content != "Hello, world!" {
		t.Fatalf("hello: %+v, %v", res, err)
	}
	res, err = call(t, s, snap, "fail", `{}`)
	if err != nil || !res.IsError || res.Content != "Some error message" {
		t.Fatalf("fail: want the tool error %q, have %+v, %v", "Some error message", res, err)
	}
	res, err = call(t, s, snap, "alloc", `{}`)
	if err != nil || res.IsError {
		t.Fatalf("alloc: %+v, %v", res, err)
	}
	// input_offset_length outputs the input's length as a little-endian
	// u64 (go-sdk's test reads its first byte): the input here is the
	// arguments' compact JSON.
	args := `{"a": "hello world"}`
	res, err = call(t, s, snap, "offset", args)
	if err != nil || res.IsError || res.Content == "" || int(res.Content[0]) != len(`{"a":"hello world"}`) {
		t.Fatalf("input_offset_length: %q, %v", res.Content, err)
	}
}

// TestExtismCountVowelsVars: count_vowels keeps a running total in a var
// (go-sdk's own test expects {"count":3,"total":3} then
// {"count":1,"total":4}); the total carries on within a session and
// starts again in another.
func TestExtismCountVowelsVars(t *testing.T) {
	snap := writeExtism(t, extismPlugin{name: "vowels", module: gosdkWasm(t, "count_vowels.wasm"), tools: countVowelsTool})
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	for _, c := range []struct{ in, want string }{
		{"aaa", `{"count":3,"total":3,"vowels":"aeiouAEIOU"}`},
		{"bbba", `{"count":1,"total":4,"vowels":"aeiouAEIOU"}`},
	} {
		res, err := call(t, s, snap, "countVowels", fmt.Sprintf(`{"text": %q}`, c.in))
		if err != nil || res.IsError || res.Content != c.want {
			t.Fatalf("count_vowels(%q) = %+v, %v; want %s", c.in, res, err, c.want)
		}
		if string(res.Structured) != c.want {
			t.Errorf("structured = %s, want the output object", res.Structured)
		}
	}
	other := h.NewSession()
	defer other.Close(context.Background())
	res, err := call(t, other, snap, "countVowels", `{"text": "Hello World"}`)
	if err != nil || res.Content != `{"count":3,"total":3,"vowels":"aeiouAEIOU"}` {
		t.Fatalf("another session sees the first one's total: %+v, %v", res, err)
	}
	if strings.Contains(res.Content, `"total":7`) {
		t.Fatal("vars crossed sessions")
	}
}

// TestExtismGoSDKSuite runs more of go-sdk's plugins as its own tests do,
// with the results its tests expect, except where Toolshed is stricter on
// purpose: a sleep is stopped at the plugin's deadline, http needs a
// grant, and there are no preopened directories (allowed_paths).
func TestExtismGoSDKSuite(t *testing.T) {
	snap := writeExtism(t,
		extismPlugin{name: "config", module: gosdkWasm(t, "config.wasm"), tools: runTest("config"),
			extra: `"capabilities": {"config": ["thing"]}`},
		extismPlugin{name: "sleep", module: gosdkWasm(t, "sleep.wasm"), tools: runTest("sleep"),
			extra: `"capabilities": {"config": ["duration"]}, "limits": {"timeout_ms": 300}`},
		extismPlugin{name: "logger", module: gosdkWasm(t, "log.wasm"), tools: runTest("logger"), extra: `"capabilities": {"log": true}`},
		extismPlugin{name: "http", module: gosdkWasm(t, "http.wasm"), tools: runTest("http"), extra: `"capabilities": {"http": ["*"]}`},
		extismPlugin{name: "fs", module: gosdkWasm(t, "fs.wasm"), tools: runTest("fs")},
	)
	for _, granted := range []bool{true, false} {
		opts := &wasm.Options{}
		want := `{"config": "<unset by host>"}`
		if granted {
			opts.Grants = map[string]wasm.Grants{"config": {Config: map[string]string{"thing": "hello"}},
				"sleep": {Config: map[string]string{"duration": "60"}}, "logger": {Log: true}}
			want = `{"config": "hello"}`
		}
		h, logs := newHost(t, opts)
		s := h.NewSession()
		defer s.Close(context.Background())
		if res, err := call(t, s, snap, "config", `{}`); err != nil || res.Content != want {
			t.Errorf("config (granted %v): %+v, %v; want %s", granted, res, err, want)
		}
		if res, err := call(t, s, snap, "logger", `{}`); err != nil || res.IsError {
			t.Errorf("log: %+v, %v", res, err)
		}
		for _, msg := range []string{"this is a warning log", "this is an error log"} {
			if strings.Contains(logs.String(), msg) != granted {
				t.Errorf("log granted %v, but %q in the host log is %v", granted, msg, !granted)
			}
		}
		// go-sdk runs http.wasm against jsonplaceholder.typicode.com;
		// here nothing is granted: refused before any request.
		if res, err := call(t, s, snap, "http", `{}`); err != nil || !res.IsError || !strings.Contains(res.Content, `capability "http" is not granted`) {
			t.Errorf("http: %+v, %v", res, err)
		}
		if res, err := call(t, s, snap, "fs", `{}`); err == nil && !res.IsError {
			t.Errorf("fs.wasm read a file: %+v; there are no preopened directories", res)
		}
	}
	// The sleep of a minute is stopped at the 300 ms deadline.
	h, _ := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"sleep": {Config: map[string]string{"duration": "60"}}}})
	s := h.NewSession()
	defer s.Close(context.Background())
	done := make(chan error, 1)
	go func() { _, err := call(t, s, snap, "sleep", `{}`); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("sleep: %v; want timed out", err)
		}
	case <-time.After(50 * time.Second): // the sleep's own minute, were it not stopped
		t.Fatal("the sleep was not stopped at its deadline")
	}
}
