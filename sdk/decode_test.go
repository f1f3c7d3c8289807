package sdk

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"unsafe"
)

type inner struct {
	X  int     `json:"x"`
	Ok bool    `json:"ok,omitempty"`
	F  float32 `json:"f"`
}

type level string

// wide covers every kind the fast decoder plans for.
type wide struct {
	Name    string   `json:"name"`
	Count   int      `json:"count"`
	Tags    []string `json:"tags"`
	Levels  []level  `json:"levels"`
	I8      int8
	U16     uint16 `json:"u16"`
	U       uint64 `json:"u"`
	F       float64
	B       bool       `json:"b"`
	In      inner      `json:"in"`
	List    []inner    `json:"list"`
	Nums    []int32    `json:"nums"`
	Grid    [][]uint16 `json:"grid"`
	Skip    string     `json:"-"`
	private int
}

type notPlanned struct {
	P *string          `json:"p"`
	M map[string]int   `json:"m"`
	A any              `json:"a"`
	R json.RawMessage  `json:"r"`
	S int              `json:"s,string"`
	E struct{ inner }  `json:"e"`
	T map[level]string `json:"t"`
}

func TestPlanFor(t *testing.T) {
	if planFor(reflect.TypeFor[wide]()) == nil {
		t.Fatal("wide: no plan")
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[notPlanned](), reflect.TypeFor[map[string]any](), reflect.TypeFor[[]string](),
		reflect.TypeFor[struct{ P *string }](), reflect.TypeFor[struct{ inner }](),
		reflect.TypeFor[struct {
			A string `json:"a"`
			B string `json:"A"`
		}](),
		reflect.TypeFor[struct {
			T json.Number `json:"t"`
		}](),
		reflect.TypeFor[struct {
			B []byte `json:"b"`
		}](),
	} {
		if planFor(typ) != nil {
			t.Errorf("%v: planned, want encoding/json", typ)
		}
	}
}

// checkFast asserts that decodeFast agrees with encoding/json: when it
// decodes, encoding/json decodes the same value without error.
func checkFast[T any](t *testing.T, in []byte) (fast bool) {
	t.Helper()
	p := planFor(reflect.TypeFor[T]())
	var got T
	if !decodeFast(p, in, unsafe.Pointer(&got)) {
		return false
	}
	var want T
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatalf("%q: fast decoded %+v, encoding/json: %v", in, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nfast          %+v\nencoding/json %+v", in, got, want)
	}
	return true
}

var decodeSeeds = []string{
	`{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}`,
	`{"name":"世界","count":-7,"tags":[],"levels":["a","b"],"I8":-128,"u16":65535,"u":18446744073709551615,"F":1.5e-3,"b":true}`,
	`{"in":{"x":1,"ok":false,"f":3.25},"list":[{"x":2},{"f":-0.0},{}],"nums":[1,2,3],"grid":[[1,2],[],[255]]}`,
	` { "name" : null , "tags" : null , "in" : null , "extra" : {"deep":[1,{"a":"\u00e9"}],"t":true,"n":null} } `,
	`{"tags":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r"]}`,
	`{}`, `null`, `[]`, `{"name":"a\nb"}`, `{"name":"\u0041"}`, `{"NAME":"x"}`, `{"name":"x","name":"y"}`,
	`{"count":1.5}`, `{"count":1e3}`, `{"count":"1"}`, `{"I8":128}`, `{"u":-1}`, `{"b":1}`, `{"name":"\xff"}`,
	`{"name":"x"} x`, `{"name":"x",}`, `{"name":"x"`, `{"tags":["a",]}`, `{"F":01}`, `{"F":1.}`, `{"F":-}`,
	`{"extra":"\x01"}`, `{"extra":"\q"}`, `{"extra":tru}`, `{"extra":[1 2]}`, `{"name":"x"}}`,
}

func TestDecodeFast(t *testing.T) {
	fast := 0
	for _, s := range decodeSeeds {
		if checkFast[wide](t, []byte(s)) {
			fast++
		}
	}
	if fast < 5 {
		t.Fatalf("only %d of the seeds took the fast path", fast)
	}
	var e struct {
		Name  string   `json:"name"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	p := planFor(reflect.TypeOf(e))
	if !decodeFast(p, []byte(decodeSeeds[0]), unsafe.Pointer(&e)) || e.Name != "quarterly revenue report" || e.Count != 42 || len(e.Tags) != 5 {
		t.Fatalf("echo arguments: %+v", e)
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkFast[wide](t, in)
		checkFast[inner](t, in)
	})
}

func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"tool":"echo","arguments":{"name":"x"}}`, `{"arguments":{},"tool":"a"}`, `{"tool":"a\"b","arguments":{}}`,
		`{"tool":"a","arguments":}`, `{"tool":"a","arguments":{}} `, `{"tool":"a","arguments":{},"tool":"b"}`,
		`{"tool":"é","arguments":[1]}`, `{}`, `{"tool":"a","arguments":null}`, `{"tool":"a","x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tool, args, ok := parseRequest(in)
		if ok {
			var req struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(in, &req); err != nil {
				t.Fatalf("%q: parsed, encoding/json: %v", in, err)
			}
			if req.Tool != string(tool) || string(req.Arguments) != string(args) {
				t.Fatalf("%q: parsed %q %q, encoding/json %q %q", in, tool, args, req.Tool, req.Arguments)
			}
		}
		// The host's form: the tool is the same and the arguments are the
		// same value once they are valid.
		tool2, args2, ok2 := splitRequest(in)
		if ok2 && json.Valid(args2) {
			var req struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(in, &req); err != nil {
				t.Fatalf("%q: split with valid arguments, encoding/json: %v", in, err)
			}
			if req.Tool != string(tool2) || string(req.Arguments) != string(args2) {
				t.Fatalf("%q: split %q %q, encoding/json %q %q", in, tool2, args2, req.Tool, req.Arguments)
			}
		}
	})
}

func TestSmallInt(t *testing.T) {
	for _, lit := range []string{"0", "-0", "7", "-128", "127", "128", "-129", "32767", "-32768", "2147483647", "2147483648",
		"-2147483649", "999999999999999999", "-999999999999999999", "1000000000000000000", "", "-", "1.5", "1e3", "12a"} {
		for _, size := range []int{8, 16, 32, 64} {
			n, ok := smallInt(lit, size)
			want, err := strconv.ParseInt(lit, 10, size)
			if ok && (err != nil || n != want) {
				t.Errorf("smallInt(%q, %d) = %d; strconv: %d, %v", lit, size, n, want, err)
			}
		}
	}
}
