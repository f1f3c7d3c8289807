package text

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestStem(t *testing.T) {
	// Words in one group must meet on one stem.
	groups := [][]string{
		{"query", "queries", "querying", "queried"},
		{"create", "created", "creating", "creates"},
		{"calculate", "calculated", "calculating", "calculates"},
		{"table", "tables"},
		{"chart", "charts", "charting", "charted"},
		{"stop", "stopped", "stopping", "stops"},
		{"run", "running", "runs"},
		{"match", "matches", "matched", "matching"},
		{"class", "classes"},
		{"box", "boxes"},
		{"price", "prices", "pricing", "priced"},
		{"city", "cities"},
		{"copy", "copies", "copied", "copying"},
		{"add", "added", "adding", "adds"},
		{"embed", "embedded", "embedding"},
	}
	for _, g := range groups {
		want := Stem(g[0])
		for _, w := range g[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want them equal", w, got, g[0], want)
			}
		}
	}
	// Words the rules must leave apart or alone.
	keep := map[string]string{"news": "news", "status": "status", "analysis": "analysis",
		"string": "string", "speed": "speed", "gas": "gas", "api": "api", "sql": "sql", "thing": "thing"}
	for w, want := range keep {
		if got := Stem(w); got != want {
			t.Errorf("Stem(%q) = %q, want %q", w, got, want)
		}
	}
	if Stem("news") == Stem("new") {
		t.Error("news and new must not meet")
	}
}

func TestAnalyzerASCII(t *testing.T) {
	a := &Analyzer{}
	cases := []struct {
		in   string
		want []string
	}{
		{"executeSql", []string{"execut", "sql", "executesql"}},
		{"getHTTP2Status", []string{"get", "http", "2", "status", "gethttp2status"}},
		{"describe_tables", []string{"describ", "tabl"}},
		{"list-tables", []string{"list", "tabl"}},
		{"plugin.tool.name", []string{"plugin", "tool", "nam"}},
		{"XMLParser", []string{"xml", "parser", "xmlparser"}},
		{"three UUIDs", []string{"three", "uuid"}}, // an acronym's plural is one word
		{"getURLs", []string{"get", "url", "geturls"}},
		{"IDs", []string{"id"}},
		{"the PDFs", []string{"pdf"}},
		{"listAPIsByTag", []string{"list", "api", "tag", "listapisbytag"}},
		{"HTTPSConnection", []string{"http", "connection", "httpsconnection"}},
		{"getAccountIDfromName", []string{"get", "account", "id", "nam", "getaccountidfromname"}}, // an acronym, then a connective
		{"JPEGtoPNG", []string{"jpeg", "png", "jpegtopng"}},
		{"convertDNAtoRNA", []string{"convert", "dna", "rna", "convertdnatorna"}},
		{"PDFtoText", []string{"pdf", "text", "pdftotext"}},
		{"HTTPOrigin", []string{"http", "origin", "httporigin"}}, // a capital still starts the word
		{"getUserIDForEmail", []string{"get", "user", "id", "email", "getuseridforemail"}},
		{"CPUMinLoad", []string{"cpu", "min", "load", "cpuminload"}},
		{"APIHasKey", []string{"api", "key", "apihaskey"}},
		{"SSHPin", []string{"ssh", "pin", "sshpin"}},
		{"getIDforUser", []string{"get", "id", "user", "getidforuser"}},
		{"The weather in Paris", []string{"weather", "paris"}},
		{"ＳＱＬ　query", []string{"sql", "queri"}}, // full-width ASCII and ideographic space
		{"a b c", nil}, // single letters and stop words drop
		{"Crème brûlée", []string{"crème", "brûlée"}},
	}
	for _, c := range cases {
		got := a.Terms(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFold(t *testing.T) {
	cases := map[string]string{
		"查詢表結構":      "查询表结构",
		"天氣預報":       "天气预报",
		"圖表":         "图表",
		"already 简体": "already 简体",
		"ＡＢＣ１２３":     "ABC123",
	}
	for in, want := range cases {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Fold("a\xffb"); got != "a b" {
		t.Errorf("invalid UTF-8: got %q", got)
	}
}

var testSeg = NewSegmenter("", []string{"表结构"})

func TestAnalyzerChinese(t *testing.T) {
	a := &Analyzer{Chinese: testSeg}
	has := func(terms []string, want ...string) {
		t.Helper()
		set := map[string]bool{}
		for _, x := range terms {
			set[x] = true
		}
		for _, w := range want {
			if !set[w] {
				t.Errorf("terms %q lack %q", terms, w)
			}
		}
	}
	has(a.Terms("查天气"), "天气")
	has(a.Terms("生成图表"), "生成", "图表")
	has(a.Terms("查表结构"), "表结构", "结构")
	// Traditional meets Simplified.
	has(a.Terms("查詢表結構"), "表结构", "查询")
	// Mixed Chinese and English.
	has(a.Terms("帮我用SQL查一下orders表"), "sql", "order")
	// Stop words drop.
	for _, x := range a.Terms("我的一个请求") {
		if x == "的" || x == "我" {
			t.Errorf("stop word %q kept", x)
		}
	}
	// The same text always gives the same terms (documents and queries meet).
	if !reflect.DeepEqual(a.Terms("天气预报和图表"), a.Terms("天气预报和图表")) {
		t.Error("analysis is not deterministic")
	}
}

func TestAnalyzerBigramsOnly(t *testing.T) {
	a := &Analyzer{} // no segmenter: bigrams alone
	got := a.Terms("查表结构")
	want := []string{"查表", "表结", "结构"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSegmenterLoadsOnce(t *testing.T) {
	s := NewSegmenter("", nil)
	if s.LoadTime() != 0 {
		t.Fatal("dictionary loaded before use")
	}
	s.Preload()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if s.LoadTime() == 0 {
		t.Fatal("no load time recorded")
	}
	bad := NewSegmenter("/nonexistent/dict.txt", nil)
	if err := bad.Wait(); err == nil || !strings.Contains(err.Error(), "dict.txt") {
		t.Fatalf("missing dictionary: err = %v", err)
	}
	// A failed dictionary still leaves bigrams.
	a := &Analyzer{Chinese: bad}
	if got := a.Terms("图表"); len(got) == 0 {
		t.Fatal("no terms without a dictionary")
	}
}

func TestMemoFrozen(t *testing.T) {
	a := &Analyzer{}
	a.Memoize()
	first := a.Terms("executeSql tables")
	a.Freeze()
	if !reflect.DeepEqual(a.Terms("executeSql tables"), first) {
		t.Fatal("memoised terms differ")
	}
	n := len(a.memo)
	a.Terms("somethingNew")
	if len(a.memo) != n {
		t.Fatal("a frozen memo grew")
	}
}

// TestEachUnrecorded: the same terms as Each, read from the memo where a
// word is there, and no new word recorded; the memo records again after.
func TestEachUnrecorded(t *testing.T) {
	a := &Analyzer{}
	a.Memoize()
	a.Terms("weather forecast")
	n := len(a.memo)
	var got []string
	a.EachUnrecorded("weather Books12345 forecast", func(term string) { got = append(got, term) })
	if want := (&Analyzer{}).Terms("weather Books12345 forecast"); !reflect.DeepEqual(got, want) {
		t.Fatalf("EachUnrecorded gave %v; Each gives %v", got, want)
	}
	if len(a.memo) != n {
		t.Fatalf("the memo grew from %d to %d words", n, len(a.memo))
	}
	a.Terms("Books12345")
	if len(a.memo) != n+1 {
		t.Fatalf("the memo stopped recording: %d words, want %d", len(a.memo), n+1)
	}
}

func FuzzAnalyzer(f *testing.F) {
	for _, s := range []string{"executeSql", "查询表结构", "查詢表結構", "帮我用SQL查一下orders表", "getHTTP2Status_v1.2-beta",
		"ＳＱＬ", "\xff\xfe", "a\u0301b", strings.Repeat("x", 200), "🙂天气🙂weather", "", strings.Repeat("天气预报𠀀", 20)} {
		f.Add(s)
	}
	a := &Analyzer{Chinese: testSeg}
	f.Fuzz(func(t *testing.T, s string) {
		terms := a.Terms(s)
		again := a.Terms(s)
		if !reflect.DeepEqual(terms, again) {
			t.Fatalf("not deterministic: %q vs %q", terms, again)
		}
		for _, x := range terms {
			if x == "" || !utf8.ValidString(x) {
				t.Fatalf("bad term %q from %q", x, s)
			}
			if HasHan(x) {
				continue
			}
			if len(x) > MaxTermBytes {
				t.Fatalf("term %q longer than %d bytes", x, MaxTermBytes)
			}
			if strings.ToLower(x) != x {
				t.Fatalf("term %q not lowercase", x)
			}
		}
	})
}

// TestFastPaths: IsHan's and Fold's shortcuts agree with the tables they skip.
func TestFastPaths(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if IsHan(r) != unicode.Is(unicode.Han, r) {
			t.Fatalf("IsHan(%U) = %v", r, IsHan(r))
		}
		if r < 0x3400 || r >= 0xFF01 && r <= 0xFF5E || r > 0xFFFF && r < 0x20000 {
			continue
		}
		want := r
		if i := sort.Search(len(t2sFrom), func(i int) bool { return t2sFrom[i] >= r }); i < len(t2sFrom) && t2sFrom[i] == r {
			want = t2sTo[i]
		}
		if got := foldRune(r); got != want {
			t.Fatalf("foldRune(%U) = %U, want %U", r, got, want)
		}
	}
}
