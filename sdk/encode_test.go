package sdk

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// out covers every kind the fast encoder plans for.
type out struct {
	Name   string    `json:"name"`
	Empty  string    `json:"empty,omitempty"`
	Count  int       `json:"count,omitempty"`
	I8     int8      `json:"i8"`
	U8     uint8     `json:"u8"`
	U      uint64    `json:"u,omitempty"`
	F      float64   `json:"f"`
	F32    float32   `json:"f32,omitempty"`
	B      bool      `json:"b,omitempty"`
	Tags   []string  `json:"tags"`
	Levels []level   `json:"levels,omitempty"`
	In     inner     `json:"in"`
	List   []inner   `json:"list"`
	Grid   [][]int16 `json:"grid,omitempty"`
	Skip   string    `json:"-"`
	Plain  string
	hidden int
}

func checkEncode(t *testing.T, v any) (fast bool) {
	t.Helper()
	got, ok := marshalFast(nil, v)
	want, err := json.Marshal(v)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%+v: fast encoded %s, encoding/json: %v", v, got, err)
	}
	if string(got) != string(want) {
		t.Fatalf("%+v:\nfast          %s\nencoding/json %s", v, got, want)
	}
	return true
}

func TestEncodeFast(t *testing.T) {
	vals := []any{
		out{}, &out{Name: "x"}, (*out)(nil),
		out{Name: "a<b>&c \"q\" \\ \n\r\t\b\f\x00\x1f \u2028\u2029 é 世界 \xff\xfe", Count: -3, I8: -128, U8: 255, U: math.MaxUint64,
			F: 1e21, F32: 1e-7, B: true, Tags: []string{}, Levels: []level{"x"}, In: inner{X: 1, Ok: true, F: 0.1},
			List: []inner{{}, {X: -1}}, Grid: [][]int16{{1, 2}, nil, {}}, Skip: "no", Plain: "yes", hidden: 1},
		out{F: 123456789.125, F32: 3.4e38}, out{F: 1e-6}, out{F: 5e-324}, out{F: -0.0}, out{F: 1e20}, out{F: 0.000001234},
		inner{F: float32(math.Inf(1))}, out{F: math.NaN()},
	}
	fast := 0
	for _, v := range vals {
		if checkEncode(t, v) {
			fast++
		}
	}
	if fast != len(vals)-2 {
		t.Fatalf("%d of %d values took the fast path, want all but the Inf and NaN", fast, len(vals))
	}
	for _, v := range []any{map[string]int{"a": 1}, []string{"a"}, "s", 1, nil, notPlanned{},
		struct {
			A string `json:"a,omitzero"`
		}{}, struct {
			B []byte `json:"b"`
		}{}} {
		if _, ok := marshalFast(nil, v); ok {
			t.Errorf("%T: fast path, want encoding/json", v)
		}
	}
	if r := JSON(out{Name: "<x>"}); r.Content != string(r.Structured.(json.RawMessage)) || !strings.HasPrefix(r.Content, `{"name":"\u003cx\u003e"`) {
		t.Fatalf("JSON: %+v", r)
	}
}

// FuzzEncodeFast: any value encoding/json can decode into out is encoded
// the same by both encoders.
func FuzzEncodeFast(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"name":"<&>\u2028\ud800","f":1e-7,"f32":1e30,"levels":["a"],"grid":[[1],[]],"Plain":"p"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var v out
		if json.Unmarshal(in, &v) == nil {
			checkEncode(t, v)
			checkEncode(t, &v)
		}
	})
}
