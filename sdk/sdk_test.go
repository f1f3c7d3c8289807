package sdk

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/sdk/abi"
)

type greetArgs struct {
	Name string `json:"name"`
}

func init() {
	Handle("greet", func(a greetArgs) (Result, error) {
		if a.Name == "" {
			return Result{}, errors.New("name is empty")
		}
		return JSON(map[string]string{"hello": a.Name}), nil
	})
	Handle("boom", func(a greetArgs) (Result, error) { panic("kaboom") })
}

// decode reads an ABI result as docs/ABI.md says a host does: without a
// "content" key, the content is the structured JSON text.
func decode(t *testing.T, b []byte) abi.Result {
	t.Helper()
	var r abi.Result
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(b, &keys)
	if _, ok := keys["content"]; !ok && r.Structured != nil {
		r.Content = string(r.Structured)
	}
	return r
}

func TestDispatch(t *testing.T) {
	raw := Dispatch([]byte(`{"tool":"greet","arguments":{"name":"世界 \"quoted\"\n"}}`))
	if want := `{"structured":{"hello":"世界 \"quoted\"\n"}}`; string(raw) != want {
		t.Fatalf("greet: wrote %s, want %s (no content: the host reads the structured text)", raw, want)
	}
	r := decode(t, raw)
	if r.IsError || r.Content != `{"hello":"世界 \"quoted\"\n"}` || string(r.Structured) != r.Content {
		t.Fatalf("greet: %+v", r)
	}
	for req, want := range map[string]string{
		`{"tool":"greet","arguments":{}}`:          "name is empty",
		`{"tool":"greet","arguments":{"name":5}}`:  "invalid arguments for greet",
		`{"tool":"nope","arguments":{}}`:           `plugin has no tool "nope" (it has: [boom greet])`,
		`not json`:                                 "malformed request",
		`{"tool":"boom","arguments":{"name":"x"}}`: "plugin panicked: kaboom",
	} {
		r := decode(t, Dispatch([]byte(req)))
		if !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: %+v, want a tool error with %q", req, r, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\x00\x1f", "世界", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q → %s → %q", s, b, back)
		}
	})
}

func TestNotHosted(t *testing.T) {
	if _, err := Config("x"); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("err = %v", err)
	}
}

// TestNoWazero: a plugin importing the SDK must not pull in the runtime.
func TestNoWazero(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "./abi").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "wazero") || strings.Contains(dep, "toolshed/host") {
			t.Fatalf("package sdk depends on %s", dep)
		}
	}
}

// TestEncodeContent: only a result whose content is its structured JSON's
// own text (JSON's results) leaves "content" out; every other result is
// written as before, an empty content included.
func TestEncodeContent(t *testing.T) {
	b := []byte(`{"a":1}`)
	failed := JSON(map[string]int{"a": 1})
	failed.IsError = true
	for _, c := range []struct {
		r    Result
		want string
	}{
		{JSON(map[string]int{"a": 1}), `{"structured":{"a":1}}`},
		{jsonSlow(map[string]int{"a": 1}), `{"structured":{"a":1}}`},
		{failed, `{"structured":{"a":1},"is_error":true}`},
		{Result{Content: string(b), Structured: json.RawMessage(b)}, `{"content":"{\"a\":1}","structured":{"a":1}}`},
		{Result{Structured: json.RawMessage(b)}, `{"content":"","structured":{"a":1}}`},
		{Result{Content: "one", Structured: map[string]int{"a": 1}}, `{"content":"one","structured":{"a":1}}`},
		{Result{Content: "two"}, `{"content":"two"}`},
		{Result{}, `{"content":""}`},
	} {
		if got := string(encode(nil, c.r)); got != c.want {
			t.Errorf("%+v: wrote %s, want %s", c.r, got, c.want)
		}
		if got := decode(t, encode(nil, c.r)); got.Content != c.r.Content {
			t.Errorf("%+v: the host reads content %q, want %q", c.r, got.Content, c.r.Content)
		}
	}
}
