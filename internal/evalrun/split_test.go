package evalrun

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/names"
)

func TestSplitFixedAndBalanced(t *testing.T) {
	var qs []Query
	for i := 0; i < 4000; i++ {
		qs = append(qs, Query{Query: fmt.Sprintf("request number %d", i), Tools: []string{"t"}})
	}
	tune, test := Split(qs, Tune), Split(qs, Test)
	if len(tune)+len(test) != len(qs) {
		t.Fatalf("halves %d + %d != %d", len(tune), len(test), len(qs))
	}
	if len(tune) < 1800 || len(test) < 1800 {
		t.Errorf("unbalanced halves: %d tune, %d test", len(tune), len(test))
	}
	// Fixed by the text alone: order, neighbours and surrounding space do
	// not move a request.
	rev := make([]Query, len(qs))
	for i, q := range qs {
		rev[len(qs)-1-i] = Query{Query: "  " + q.Query + "\n", Tools: q.Tools}
	}
	if got := len(Split(rev, Tune)); got != len(tune) {
		t.Errorf("reversed, padded set: %d tune, want %d", got, len(tune))
	}
	for _, q := range tune[:50] {
		if HalfOf(q.Query) != Tune {
			t.Fatalf("%q moved", q.Query)
		}
	}
	// Known answers pin the hash, so that a change of the rule shows.
	for q, want := range map[string]Half{"": Test, "weather in Paris": Test, "get the weather": Tune, "生成图表": Tune, "查表结构": Test} {
		if got := HalfOf(q); got != want {
			t.Errorf("HalfOf(%q) = %s, want %s", q, got, want)
		}
	}
	if len(Split(qs, All)) != len(qs) {
		t.Error("All is not every query")
	}
	for _, s := range []string{"tune", "test", "all", ""} {
		if _, ok := ParseHalf(s); !ok {
			t.Errorf("ParseHalf(%q) refused", s)
		}
	}
	if _, ok := ParseHalf("train"); ok {
		t.Error("ParseHalf(train) accepted")
	}
}

func TestPad(t *testing.T) {
	own := []manifest.Tool{{Name: "getWeather", Description: "Current weather. For a city."}, {Name: "sendMail", Description: "Send an e-mail"}}
	pool := []manifest.Tool{{Name: "get_weather", Description: "a clash"}, {Name: "listFiles", Description: "List files. In a folder."}, {Name: "readFile", Description: "Read a file"}}
	for _, shape := range []Shape{Recombined, Sentence} {
		got := Pad(own, pool, 14, shape)
		if len(got) != 14 {
			t.Fatalf("%s: %d tools, want 14", shape, len(got))
		}
		seen := map[string]bool{}
		for _, tool := range got {
			k := names.Fold(tool.Name)
			if seen[k] {
				t.Fatalf("%s: %q twice", shape, tool.Name)
			}
			seen[k] = true
			if tool.Description == "a clash" {
				t.Fatalf("%s: a pool tool that clashes with an own tool was kept", shape)
			}
		}
		if !seen[names.Fold(own[0].Name)] || !seen[names.Fold(own[1].Name)] {
			t.Errorf("%s: an own tool is missing", shape)
		}
		if names.Fold(got[0].Name) == names.Fold(own[0].Name) && names.Fold(got[1].Name) == names.Fold(own[1].Name) {
			t.Errorf("%s: the own tools lead the catalog", shape)
		}
		if again := Pad(own, pool, 14, shape); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Errorf("%s: not deterministic", shape)
		}
	}
	// Padded with real tools alone (no distractor needed), the own tools
	// are spread through the catalog too.
	var many []manifest.Tool
	for i := 0; i < 50; i++ {
		many = append(many, manifest.Tool{Name: fmt.Sprintf("tool%02d", i)})
	}
	if got := Pad(own, many, 30, Recombined); len(got) != 30 || (got[0].Name == own[0].Name && got[1].Name == own[1].Name) {
		t.Errorf("padded with real tools: %d tools, first %q %q", len(got), got[0].Name, got[1].Name)
	}
	if got := Pad(own, pool, 1, Recombined); len(got) != 2 {
		t.Errorf("n under the own set: %d tools, want the 2 own", len(got))
	}
	if s := firstSentence("One. Two. Three"); s != "One." {
		t.Errorf("firstSentence = %q", s)
	}
	if s := firstSentence(strings.Repeat("天", 100)); !utf8.ValidString(s) || len(s) > 200 {
		t.Errorf("firstSentence cut a rune: %q", s)
	}
}
