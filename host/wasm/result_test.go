package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/sdk/abi"
)

// slowResult is the encoding/json reading decodeResult must agree with.
func slowResult(raw []byte) (abi.Result, bool) {
	var res abi.Result
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || !json.Valid(raw) {
		return abi.Result{}, false
	}
	if len(res.Structured) == 0 {
		res.Structured = nil
	}
	// No "content" key (encoding/json matches keys case-insensitively):
	// the content is the structured text.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		panic(err) // decoded above
	}
	content := false
	for k := range keys {
		content = content || strings.EqualFold(k, "content")
	}
	if !content && res.Structured != nil {
		res.Content = string(res.Structured)
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
	`{"content":"x"}]`,
	`{"content":"x"} ` + "\n",
	`{"content":null}`,
	`{"content":"x","structured":null}`,
	`{"content":"x","structured":01}`,
	`{"content":"x","structured":{"a":[1,2,{"b":"c"}]}}`,
	`{"content":"x","is_error":1}`,
	`{}`,
	`[]`,
	`{"content":"ctl` + "\x01" + `"}`,
	// Without "content", the content is the structured text as written.
	`{"structured":{"name":"q","n":1}}`,
	`{"structured":{"name":"q","n":1},"is_error":true}`,
	`{"is_error":true,"structured":[1,"二"]}`,
	` { "structured" : [ 1 , {"a" : "\u00e9"} ] } `,
	`{"structured":null}`,
	`{"structured":"\xff"}`,
	"{\"structured\":\"\xff\"}",
	"{\"content\":\"bad \xff utf8\",\"structured\":{\"a\":\"\xed\xa0\x80\"}}",
	`{"structured":"s","structured":{"t":2}}`,
	`{"is_error":false}`,
	`{"content":null,"structured":1}`,
	`{"content":"","structured":1}`,
	`{"CONTENT":"","structured":1}`,
	`{"\u0063ontent":"","structured":1}`,
	`{"Structured":{"a":1}}`,
}

func TestDecodeResult(t *testing.T) {
	for _, in := range resultSeeds {
		checkResult(t, []byte(in))
	}
	for _, in := range []string{resultSeeds[1], `{"structured":{"name":"q","n":1}}`} {
		if _, ok := fastResult([]byte(in)); !ok {
			t.Errorf("%s: the common form did not take the fast path", in)
		}
	}
}

// TestContentFromStructured: a result that leaves "content" out reads,
// to the model, exactly as the same result with the structured text as its
// content did (what sdk.JSON wrote before).
func TestContentFromStructured(t *testing.T) {
	for _, j := range []string{`{"name":"q","n":1}`, `{"a":"<&> \u2028 世界 \"q\"\n","b":[1.5e3,null,true]}`, `"s"`, `0`, `null`, `[]`} {
		checkContentFromStructured(t, []byte(j))
	}
}

func checkContentFromStructured(t *testing.T, j []byte) {
	t.Helper()
	j = bytes.TrimSpace(j)
	if !json.Valid(j) || !utf8.Valid(j) {
		return
	}
	content, _ := json.Marshal(string(j))
	old := `{"content":` + string(content) + `,"structured":` + string(j) + `}`
	want, err := decodeResult([]byte(old))
	if err != nil {
		t.Fatalf("%s: %v", old, err)
	}
	got, err := decodeResult([]byte(`{"structured":` + string(j) + `}`))
	if err != nil || !reflect.DeepEqual(got, want) || got.Content != string(j) {
		t.Fatalf("%s: without content %#v, %v; with %#v", j, got, err, want)
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
	f.Fuzz(func(t *testing.T, in []byte) {
		checkResult(t, in)
		checkContentFromStructured(t, in)
	})
}

// TestJSONResultContent: a tool returning sdk.JSON writes no content, and
// the model reads the same text as before, when the SDK wrote the JSON a
// second time as the content string.
func TestJSONResultContent(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, f.cache, -1)
	defer h.Close(context.Background())
	s := h.NewSession()
	defer s.Close(context.Background())
	res, err := s.Call(context.Background(), f.echo, json.RawMessage(echoArgs))
	if err != nil {
		t.Fatal(err)
	}
	var before abi.Result // what the SDK used to write
	if err := json.Unmarshal(nativeEcho([]byte(echoArgs)), &before); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, before) || res.Content != `{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}` {
		t.Fatalf("got %#v, want %#v", res, before)
	}
}
