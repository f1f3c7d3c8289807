package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// recorder is a wasm.Client that records what reaches it; err, when
// set, is every method's answer.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	err    error
	noProg bool // the call carried no progress token
}

func (r *recorder) note(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
	return r.err
}

func (r *recorder) Log(_ context.Context, level, logger string, data json.RawMessage) error {
	return r.note("log " + level + " " + string(data))
}

func (r *recorder) Progress(_ context.Context, progress, total float64, _ string) (bool, error) {
	if r.noProg {
		return false, nil
	}
	return r.err == nil, r.note(fmt.Sprintf("progress %g/%g", progress, total))
}

func (r *recorder) Sample(_ context.Context, req *abi.ClientSampleRequest) (*abi.ClientSampleReply, error) {
	if err := r.note(fmt.Sprintf("sample %d %s", req.MaxTokens, req.Messages[0].Text)); err != nil {
		return nil, err
	}
	return &abi.ClientSampleReply{Role: "assistant", Text: "sampled"}, nil
}

func (r *recorder) Elicit(_ context.Context, req *abi.ClientElicitRequest) (*abi.ClientElicitReply, error) {
	if err := r.note("elicit " + req.Message); err != nil {
		return nil, err
	}
	return &abi.ClientElicitReply{Action: "cancel"}, nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// clientKit is the client capability's test plugin under a real host
// with grants g; the host's log goes to logs.
func clientKit(t *testing.T, g wasm.Grants, logs *logBuffer) *plugintest.Plugin {
	return plugintest.New(t, plugintest.Config{Dir: "../mcpserver/testdata/clientkit",
		Manifest: "../mcpserver/testdata/clientkit/clientkit.json", Grants: g,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

// callWith calls a clientkit tool in a call bound to c and returns its
// report's text.
func callWith(t *testing.T, p *plugintest.Plugin, c wasm.Client, tool, args string) string {
	t.Helper()
	res, err := p.CallClient(c, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res.Content
}

// TestClientGrants: the load log names the client features granted and
// those asked for and denied; an op of a denied feature never reaches the
// client.
func TestClientGrants(t *testing.T) {
	logs := &logBuffer{}
	p := clientKit(t, wasm.Grants{Client: []string{"sample", "log", "unasked"}}, logs)
	rec := &recorder{}
	if out := callWith(t, p, rec, "clientLog", `{"level":"info","message":"hi"}`); !strings.Contains(out, `"ok":1`) {
		t.Fatalf("granted log: %s", out)
	}
	if out := callWith(t, p, rec, "clientElicit", `{"message":"m","schema":{"type":"object"}}`); !strings.Contains(out, `capability \"client.elicit\" is not granted`) {
		t.Fatalf("denied elicit: %s", out)
	}
	if got := rec.seen(); len(got) != 1 || got[0] != `log info "hi"` {
		t.Fatalf("the client saw %q", got)
	}
	l := logs.String()
	if !strings.Contains(l, `granted=client[log,sample]`) || !strings.Contains(l, `denied="client.progress client.elicit"`) {
		t.Fatalf("load log:\n%s", l)
	}
}

// TestClientLimitsPerCall: the quotas count per bound call: each new call
// gets its own, one call's flood stops at the quota, the client's own
// errors reach the plugin named by op, max_tokens takes its default.
func TestClientLimitsPerCall(t *testing.T) {
	p := clientKit(t, wasm.Grants{Client: []string{"log", "progress", "sample", "elicit"}}, &logBuffer{})
	rec := &recorder{}
	for i := range 2 {
		out := callWith(t, p, rec, "clientLog", `{"level":"debug","message":"m","times":150}`)
		if !strings.Contains(out, `"ok":150`) || strings.Contains(out, "error") {
			t.Fatalf("call %d of 150 messages: %s", i, out)
		}
	}
	out := callWith(t, p, rec, "clientLog", `{"level":"debug","message":"m","times":1000}`)
	if !strings.Contains(out, fmt.Sprintf(`"ok":%d`, wasm.MaxClientNotifications)) || !strings.Contains(out, "quota exceeded") {
		t.Fatalf("a flood: %s", out)
	}
	if n := len(rec.seen()); n != 300+wasm.MaxClientNotifications {
		t.Fatalf("the client got %d messages", n)
	}
	rec = &recorder{}
	if out := callWith(t, p, rec, "clientSample", `{"prompt":"p"}`); !strings.Contains(out, `"text":"sampled"`) {
		t.Fatalf("sample: %s", out)
	}
	if got := rec.seen(); got[0] != fmt.Sprintf("sample %d p", wasm.DefaultSampleTokens) {
		t.Fatalf("max_tokens default: %q", got)
	}
	rec.noProg = true
	if out := callWith(t, p, rec, "clientProgress", `{"values":[1,2]}`); !strings.Contains(out, `"replies":[false,false]`) {
		t.Fatalf("progress without a token: %s", out)
	}
	rec = &recorder{err: errors.New("the user closed the window")}
	if out := callWith(t, p, rec, "clientElicit", `{"message":"m","schema":{"type":"object"}}`); !strings.Contains(out, "client.elicit: the user closed the window") {
		t.Fatalf("the client's error: %s", out)
	}
	if out := callWith(t, p, nil, "clientProgress", `{"values":[1]}`); !strings.Contains(out, "did not come from an MCP client") {
		t.Fatalf("no client: %s", out)
	}
}

// TestCheckElicitSchema: the shapes MCP allows pass, every other shape is
// refused naming the property.
func TestCheckElicitSchema(t *testing.T) {
	ok := []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"n":{"type":"string","default":"x","minLength":1}},"required":["n"]}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":3},"f":{"type":"number"},"b":{"type":"boolean","default":true}}}`,
		`{"type":"object","properties":{"e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}}}`,
		`{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a","title":"A"}]}}}`,
		`{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}`,
		`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`,
	}
	for _, s := range ok {
		if err := wasm.CheckElicitSchema(json.RawMessage(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		`[]`:                                 "not a JSON object",
		`{"type":"string"}`:                  `type must be "object"`,
		`{"properties":{}}`:                  `type must be "object"`,
		`{"type":"object","required":["x"]}`: `required property "x"`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`: `property "a": nested properties`,
		`{"type":"object","properties":{"a":{"type":"null"}}}`:                                        `property "a": type "null"`,
		`{"type":"object","properties":{"a":{}}}`:                                                     `property "a": type ""`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`:             `property "a": an array must have items that enumerate`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer","enum":[1]}}}}`: `array items must be strings`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"enumNames":["X"]}}}`:   `1 enumNames for 2 enum values`,
		`{"type":"object","properties":{"a":{"type":"string","oneOf":[{"title":"X"}]}}}`:              `oneOf[0] has no const`,
		`{"type":"object","properties":{"a":{"type":"integer","enum":[1,2]}}}`:                        `enumerations are for strings`,
	}
	many := map[string]any{}
	for i := range wasm.MaxElicitProperties + 1 {
		many[fmt.Sprint("f", i)] = map[string]string{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": many})
	bad[string(b)] = "65 properties; a form has at most 64"
	for s, want := range bad {
		err := wasm.CheckElicitSchema(json.RawMessage(s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", s, err, want)
		}
	}
}

// TestGrantsFileClient: a grants file's "client" takes the features and
// refuses anything else, naming the plugin and the index.
func TestGrantsFileClient(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "grants.json")
	os.WriteFile(path, []byte(`{"plugins":{"kit":{"client":["log","elicit"]}}}`), 0o644)
	_, g, err := wasm.LoadGrants(path)
	if err != nil || strings.Join(g["kit"].Client, ",") != "log,elicit" {
		t.Fatalf("%v %+v", err, g)
	}
	os.WriteFile(path, []byte(`{"plugins":{"kit":{"client":["log","everything"]}}}`), 0o644)
	if _, _, err := wasm.LoadGrants(path); err == nil || !strings.Contains(err.Error(), `plugins.kit.client[1]: "everything" is not a client feature`) {
		t.Fatalf("a feature that does not exist: %v", err)
	}
}

// FuzzCheckElicitSchema: no schema a plugin sends makes the check panic,
// and one it accepts is an object of at most MaxElicitProperties flat
// properties.
func FuzzCheckElicitSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`,
		`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`, `null`, `{"type":"object","properties":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if wasm.CheckElicitSchema(json.RawMessage(data)) != nil {
			return
		}
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(data, &s); err != nil || s.Type != "object" || len(s.Properties) > wasm.MaxElicitProperties {
			t.Fatalf("accepted %s (%v)", data, err)
		}
		for name, p := range s.Properties {
			var q struct {
				Type       string          `json:"type"`
				Properties json.RawMessage `json:"properties"`
			}
			if json.Unmarshal(p, &q) != nil || q.Type == "" || len(q.Properties) > 0 {
				t.Fatalf("accepted property %q: %s", name, p)
			}
		}
	})
}
