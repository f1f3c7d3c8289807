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

func decode(t *testing.T, b []byte) abi.Result {
	t.Helper()
	var r abi.Result
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return r
}

func TestDispatch(t *testing.T) {
	r := decode(t, Dispatch([]byte(`{"tool":"greet","arguments":{"name":"世界 \"quoted\"\n"}}`)))
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
