package wasm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolshed/toolshed/sdk/abi"
)

// slowResult is the encoding/json reading decodeResult must agree with.
func slowResult(raw []byte) (abi.Result, bool) {
	var res abi.Result
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || dec.More() {
		return abi.Result{}, false
	}
	if len(res.Structured) == 0 {
		res.Structured = nil
	}
	return res, true
}

var resultSeeds = []string{
	`{"content":"x"}`,
	`{"content":"{\"name\":\"q\",\"n\":1}","structured":{"name":"q","n":1}}`,
	`{"content":"a\nb\t\"c\" \\ \/","structured":[1,-2.5e+3,true,false,null,"s\u00e9"],"is_error":true}`,
	` { "content" : "x" , "is_error" : false } `,
	`{"content":"é ü 日本"}`,
	`{"content":"\u00e9"}`,
	`{"content":"bad \xff utf8"}`,
	`{"structured":"\xff","content":""}`,
	`{"content":"x","secret":1}`,
	`{"Content":"x"}`,
	`{"content":"x","content":"y"}`,
	`{"content":"unterminated`,
	`{"content":"x"} trailing`,
	`{"content":"x"}}`,
	`{"content":null}`,
	`{"content":"x","structured":null}`,
	`{"content":"x","structured":01}`,
	`{"content":"x","structured":{"a":[1,2,{"b":"c"}]}}`,
	`{"content":"x","is_error":1}`,
	`{}`,
	`[]`,
	`{"content":"ctl` + "\x01" + `"}`,
}

func TestDecodeResult(t *testing.T) {
	for _, in := range resultSeeds {
		checkResult(t, []byte(in))
	}
	if _, ok := fastResult([]byte(resultSeeds[1])); !ok {
		t.Error("the common form did not take the fast path")
	}
}

func checkResult(t *testing.T, in []byte) {
	t.Helper()
	want, wantOK := slowResult(in)
	got, err := decodeResult(in)
	if (err == nil) != wantOK {
		t.Fatalf("%q: err = %v, encoding/json ok = %v", in, err, wantOK)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %#v, want %#v", in, got, want)
	}
}

func FuzzDecodeResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkResult(t, in) })
}
