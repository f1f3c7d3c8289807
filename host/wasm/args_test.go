package wasm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/host/manifest"
)

var argsSeeds = []string{
	echoArgs,
	`{}`,
	` { "a" : [ 1 , -2.5e+3 , 0 , 1E9 , true , false , null ] , "b" : {} , "c" : [] } `,
	`{"text":"Hello, 世界! Tool Search"}`,
	`{"s":"a\nb\t\"c\" \\ \/ \b\f\r"}`,
	`{"s":"\u00e9\u4e16\ud83d\ude00"}`,
	`{"s":"\ud83d"}`,
	`{"s":"\ud83d\u0041"}`,
	`{"s":"\ude00\ud83d"}`,
	`{"s":"\ud83dx"}`,
	`{"s":"\uD83D\uDE00\u00E9"}`,
	"{\"s\":\"bad \xff utf8 \xed\xa0\x80 \xe4\xb8\"}",
	"{\"\\u006bey\":1,\"k\xffy\":2,\"k\xef\xbf\xbdy\":3}",
	`{"a":1,"a":2}`,
	`{"a":{"b":1},"a":[1]}`,
	`{"n":123456789012345678901234567890,"f":1.000000000000000000001,"e":-0e-0}`,
	`[1,2]`,
	`"just a string"`,
	`12`,
	`null`,
	`{"a":01}`,
	`{"a":1.}`,
	`{"a":.5}`,
	`{"a":-}`,
	`{"a":+1}`,
	`{"a":1e}`,
	`{"a":tru}`,
	`{"a":nul}`,
	`{"a":"ctl` + "\x01" + `"}`,
	`{"a":"\x"}`,
	`{"a":"\u12"}`,
	`{"a":"\u12g4"}`,
	`{"a":1,}`,
	`{"a" 1}`,
	`{,}`,
	`[1,]`,
	`{"a":1} x`,
	`{"a":1}}`,
	`{"a":1}]`,
	`{"a":1}{}`,
	`{"a":"unterminated`,
	`{"a":[1,2`,
	"\ufeff{}",
	"{\"a\":1}\n\t ",
	strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70),
	`{"a":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 71),
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	``,
	` `,
}

// checkArgs: decodeArgs gives the validator what jsonschema.UnmarshalJSON
// gives it, and refuses what it refuses; and isObjectText says whether
// that is an object.
func checkArgs(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	got, err := decodeArgs(in)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%q: err = %v, jsonschema.UnmarshalJSON: %v", in, err, wantErr)
	}
	if err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: err = %v, jsonschema.UnmarshalJSON: %v", in, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %#v, want %#v", in, got, want)
	}
	_, isMap := want.(map[string]any)
	if obj := isObjectText(in); obj != (wantErr == nil && isMap) {
		t.Fatalf("%q: isObjectText = %v, decoded %#v, %v", in, obj, want, wantErr)
	}
}

func TestDecodeArgs(t *testing.T) {
	for _, in := range argsSeeds {
		checkArgs(t, []byte(in))
	}
	// The forms models send take the hand decoder, escapes and non-ASCII
	// text included.
	for _, in := range argsSeeds[:11] {
		if _, ok := fastArgs([]byte(in)); !ok {
			t.Errorf("%s: not decoded by hand", in)
		}
	}
}

func FuzzDecodeArgs(f *testing.F) {
	for _, s := range argsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkArgs(t, in) })
}

// TestObjectOnlySchema: the schemas that skip decoding accept exactly the
// arguments the validator accepts, and the others are not taken for them.
func TestObjectOnlySchema(t *testing.T) {
	for schema, want := range map[string]bool{
		``:                  true,
		`{"type":"object"}`: true,
		` {"type": "object", "properties": {}, "title": "t", "description": "d"} `: true,
		`{"type":"object","properties":{"a":{"type":"string"}}}`:                   false,
		`{"type":"object","required":[]}`:                                          false,
		`{"type":"object","additionalProperties":false}`:                           false,
		`{"type":"object","minProperties":1}`:                                      false,
		`{"type":"object","$schema":"http://json-schema.org/draft-07/schema#"}`:    false,
		`{"type":["object"]}`:                                                      false,
		`{"type":"array"}`:                                                         false,
		`{}`:                                                                       false,
		`{"type":"object","description":1}`:                                        false,
		`not json`:                                                                 false,
	} {
		if got := objectOnlySchema(json.RawMessage(schema)); got != want {
			t.Errorf("%s: objectOnlySchema = %v, want %v", schema, got, want)
		}
		if !want {
			continue
		}
		sch, err := manifest.CompileSchema(json.RawMessage(schema))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range argsSeeds {
			if len(bytes.TrimSpace([]byte(in))) == 0 {
				continue // validate reads these as {}
			}
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(in))
			accepted := err == nil && sch.Validate(v) == nil
			if isObjectText([]byte(in)) != accepted {
				t.Errorf("%s, %q: isObjectText = %v, the validator accepts: %v", schema, in, !accepted, accepted)
			}
		}
	}
}

// BenchmarkValidate: a call's argument check, on the echo arguments, for
// an object-only schema and one that lists the parameters.
func BenchmarkValidate(b *testing.B) {
	for _, c := range []struct{ name, schema string }{
		{"objectOnly", `{"type":"object"}`},
		{"properties", `{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}`},
	} {
		p := &Plugin{schemas: map[string]*toolSchema{}}
		spec := manifest.Tool{Name: "echo", Parameters: json.RawMessage(c.schema)}
		args := json.RawMessage(echoArgs)
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := p.validate(spec, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decode/encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			jsonschema.UnmarshalJSON(bytes.NewReader([]byte(echoArgs)))
		}
	})
	b.Run("decode/hand", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			decodeArgs([]byte(echoArgs))
		}
	})
}
