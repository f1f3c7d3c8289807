package wasm

import (
	"encoding/json"
	"testing"

	"github.com/toolshed/toolshed/sdk/abi"
)

func TestRequestEncoding(t *testing.T) {
	in := &instance{}
	for _, c := range []struct{ args, want string }{
		{`{"a": "x<y>&z", "b": [1, 2]}`, `{"tool":"t_1","arguments":{"a":"x<y>&z","b":[1,2]}}`},
		{``, `{"tool":"t_1","arguments":{}}`},
		{" \n", `{"tool":"t_1","arguments":{}}`},
		{`null`, `{"tool":"t_1","arguments":null}`},
	} {
		b, err := in.request("t_1", json.RawMessage(c.args))
		if err != nil || string(b) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.args, b, err, c.want)
		}
		var r abi.Request
		if err := json.Unmarshal(b, &r); err != nil || r.Tool != "t_1" {
			t.Errorf("%q: %s does not decode: %v", c.args, b, err)
		}
	}
	for _, bad := range []string{`{`, `{}, "tool": "x"`, `{} {}`, `"a`} {
		if b, err := in.request("t", json.RawMessage(bad)); err == nil {
			t.Errorf("%q: encoded as %s, want an error", bad, b)
		}
	}
}
