package lexicon

import (
	"strings"
	"testing"
	"unicode"
)

func TestBuiltin(t *testing.T) {
	cs := Builtin()
	if len(cs) < 500 {
		t.Fatalf("built-in lexicon has %d concepts; it should cover hundreds", len(cs))
	}
	for i, c := range cs {
		for _, z := range c.Zh {
			for _, r := range z {
				if !unicode.Is(unicode.Han, r) {
					t.Errorf("concept %d: Chinese term %q has %q", i, z, r)
				}
			}
		}
		for _, e := range c.En {
			if strings.ToLower(e) != e {
				t.Errorf("concept %d: English term %q is not lowercase", i, e)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"天气 weather\n":                       "x:1: want Chinese terms, one TAB",
		"# c\n\n天气\t\n":                      "x:3: both sides",
		"天气\tweather\ta\n":                   "x:1: want Chinese terms",
		"\xff\tweather\n":                    "x:1: not valid UTF-8",
		strings.Repeat("a", MaxLineBytes+10): "x:1:",
	} {
		_, err := Parse(strings.NewReader(in), "x")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in[:min(len(in), 20)], err, want)
		}
	}
	cs, err := Parse(strings.NewReader("# ok\n天气|气象\tweather | forecast\n"), "x")
	if err != nil || len(cs) != 1 || len(cs[0].Zh) != 2 || cs[0].En[1] != "forecast" {
		t.Fatalf("parse: %v %v", cs, err)
	}
}
