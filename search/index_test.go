package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

var testDocs = []Document{
	{Name: "executeSql", Plugin: "sql", Description: "Run a read-only SQL query and return the rows.",
		Params: []Param{{"sql", "The SQL query to run"}}},
	{Name: "describeTables", Plugin: "sql", Description: "Describe tables: columns, data types and keys.",
		Keywords: []string{"表结构", "table schema"}},
	{Name: "listTables", Plugin: "sql", Description: "List the tables of the database."},
	{Name: "createBarChart", Plugin: "chart", Description: "Draw a bar chart from labels and series."},
	{Name: "getCurrentWeather", Plugin: "weather", Description: "Get the current weather for a city."},
	{Name: "sendEmail", Plugin: "mail", Description: "Send an email message to one or more recipients."},
	{Name: "kuaidi", Plugin: "cn", Description: "查询快递包裹的物流状态和运单轨迹"},
}

func build(t testing.TB, docs []Document, cfg *Config) *Index {
	t.Helper()
	ix, err := Build(docs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func hitNames(r Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Name)
	}
	return out
}

func top(t *testing.T, ix *Index, q string, k int) []string {
	t.Helper()
	r, err := ix.Search(q, k)
	if err != nil {
		t.Fatal(err)
	}
	return hitNames(r)
}

func TestSearchRanks(t *testing.T) {
	ix := build(t, testDocs, nil)
	cases := []struct{ q, want string }{
		{"run a sql query", "executeSql"},
		{"what columns does the orders table have", "describeTables"},
		{"bar chart of sales", "createBarChart"},
		{"weather in Paris", "getCurrentWeather"},
		{"send a mail", "sendEmail"},
		// Cross-language through the lexicon.
		{"查天气", "getCurrentWeather"},
		{"生成图表", "createBarChart"},
		{"查表结构", "describeTables"},
		{"发邮件给客户", "sendEmail"},
		{"查詢表結構", "describeTables"},   // Traditional
		{"track my parcel", "kuaidi"}, // English query, Chinese-only tool
	}
	for _, c := range cases {
		got := top(t, ix, c.q, 3)
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("%q: got %v, want %s first", c.q, got, c.want)
		}
	}
}

func TestExactNameFirst(t *testing.T) {
	ix := build(t, testDocs, nil)
	for _, q := range []string{"listTables", "list_tables", "LISTTABLES", " list-tables "} {
		got := top(t, ix, q, 5)
		if len(got) == 0 || got[0] != "listTables" {
			t.Errorf("%q: got %v, want listTables first", q, got)
		}
	}
	r, _ := ix.Search("listTables", 5)
	if r.Hits[0].Matched[0] != "name:listTables" {
		t.Errorf("matched = %v", r.Hits[0].Matched)
	}
}

func TestSelect(t *testing.T) {
	ix := build(t, testDocs, nil)
	r, err := ix.Search("select:sendEmail, executeSql,nope,sendEmail", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitNames(r); !reflect.DeepEqual(got, []string{"sendEmail", "executeSql"}) {
		t.Errorf("select: got %v", got)
	}
	if !reflect.DeepEqual(r.Unknown, []string{"nope"}) {
		t.Errorf("unknown = %v", r.Unknown)
	}
}

func TestMatchedAndScores(t *testing.T) {
	ix := build(t, testDocs, nil)
	r, _ := ix.Search("weather 天气 run sql", 5)
	if len(r.Hits) < 2 {
		t.Fatalf("hits = %v", r.Hits)
	}
	for i, h := range r.Hits {
		if h.Score <= 0 || len(h.Matched) == 0 {
			t.Errorf("hit %d: %+v has no score or matched terms", i, h)
		}
		if i > 0 && h.Score > r.Hits[i-1].Score {
			t.Errorf("hits out of order: %+v", r.Hits)
		}
	}
	matched := map[string][]string{}
	for _, h := range r.Hits {
		matched[h.Name] = h.Matched
	}
	if got := matched["getCurrentWeather"]; len(got) == 0 || got[0] != "weather" {
		t.Errorf("getCurrentWeather matched %v, want weather first", got)
	}
	if got := matched["executeSql"]; !reflect.DeepEqual(got[:2], []string{"run", "sql"}) {
		t.Errorf("executeSql matched %v, want run, sql first", got)
	}
}

func TestTiesAreDeterministic(t *testing.T) {
	var docs []Document
	for _, n := range []string{"zeta", "alpha", "mid", "beta"} {
		docs = append(docs, Document{Name: n + "Tool", Description: "same words here"})
	}
	ix := build(t, docs, nil)
	want := []string{"alphaTool", "betaTool", "midTool", "zetaTool"}
	for i := 0; i < 20; i++ {
		if got := top(t, ix, "same words", 10); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: got %v, want %v", i, got, want)
		}
	}
}

func TestNoResultAndErrors(t *testing.T) {
	ix := build(t, testDocs, nil)
	if got := top(t, ix, "xylophone quantum", 5); len(got) != 0 {
		t.Errorf("got %v for unrelated words", got)
	}
	if _, err := ix.Search(strings.Repeat("a", MaxQueryBytes+1), 5); err != ErrQueryTooLong {
		t.Errorf("long query: err = %v", err)
	}
	if got := top(t, ix, "", 5); len(got) != 0 {
		t.Errorf("empty query: %v", got)
	}
	if _, err := Build([]Document{{Name: "a"}, {Name: "A"}}, nil); err == nil {
		t.Error("duplicate names (folded) accepted")
	}
	if _, err := Build([]Document{{Name: ""}}, nil); err == nil {
		t.Error("empty name accepted")
	}
	empty := build(t, nil, nil)
	if got := top(t, empty, "anything", 5); len(got) != 0 {
		t.Errorf("empty index: %v", got)
	}
}

// A limit far past the catalog's size lists every match and allocates
// for the catalog, not for the limit.
func TestHugeLimit(t *testing.T) {
	ix := build(t, testDocs, nil)
	want := top(t, ix, "tables sql chart", len(testDocs))
	for _, limit := range []int{len(testDocs) + 1, 1 << 40, math.MaxInt} {
		if got := top(t, ix, "tables sql chart", limit); !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: got %v, want %v", limit, got, want)
		}
	}
	w := DefaultWeights
	w.RerankDepth = math.MaxInt // a depth from the weights is cut to the catalog too
	deep := build(t, testDocs, &Config{Weights: &w})
	if got := top(t, deep, "tables sql chart", 5); len(got) == 0 {
		t.Fatal("no hits with a huge RerankDepth")
	}
	empty := build(t, nil, nil)
	if got := top(t, empty, "anything", math.MaxInt); len(got) != 0 {
		t.Fatalf("empty catalog: %v", got)
	}
}

func TestLimit(t *testing.T) {
	ix := build(t, testDocs, nil)
	if got := top(t, ix, "tables sql chart weather email", 2); len(got) != 2 {
		t.Errorf("limit 2: %v", got)
	}
	if got := top(t, ix, "tables sql chart weather email", 0); len(got) != DefaultLimit {
		t.Errorf("default limit: %v", got)
	}
}

func TestExtraLexicon(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/extra.txt"
	writeFile(t, path, "# operator terms\n紫微\tbluewhale\n")
	docs := []Document{{Name: "queryBluewhale", Description: "Query the bluewhale platform"}, {Name: "other", Description: "something else"}}
	without := build(t, docs, nil)
	if got := top(t, without, "紫微", 3); len(got) != 0 {
		t.Fatalf("found %v without the extra lexicon", got)
	}
	with := build(t, docs, &Config{Lexicons: []string{path}})
	if got := top(t, with, "紫微", 3); len(got) == 0 || got[0] != "queryBluewhale" {
		t.Fatalf("with the extra lexicon: %v", got)
	}
	writeFile(t, path, "no tab here\n")
	if _, err := Build(docs, &Config{Lexicons: []string{path}}); err == nil || !strings.Contains(err.Error(), "extra.txt:1") {
		t.Fatalf("bad lexicon: err = %v", err)
	}
}

// TestConcurrentSearch hammers one index from many goroutines (run with -race).
func TestConcurrentSearch(t *testing.T) {
	ix := build(t, testDocs, nil)
	queries := []string{"查天气", "run sql", "bar chart", "listTables", "select:sendEmail", "表结构 columns"}
	want := map[string][]string{}
	for _, q := range queries {
		want[q] = top(t, ix, q, 5)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				q := queries[(g+i)%len(queries)]
				r, err := ix.Search(q, 5)
				if err != nil {
					t.Error(err)
					return
				}
				if got := hitNames(r); !reflect.DeepEqual(got, want[q]) {
					t.Errorf("%q: got %v, want %v", q, got, want[q])
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func ExampleIndex_Search() {
	ix, _ := Build([]Document{
		{Name: "getCurrentWeather", Description: "Get the current weather for a city."},
		{Name: "createBarChart", Description: "Draw a bar chart from labels and series."},
	}, nil)
	r, _ := ix.Search("查天气", 5)
	for _, h := range r.Hits {
		fmt.Println(h.Name, h.Matched)
	}
	// Output: getCurrentWeather [weather←天气]
}

func BenchmarkSearchSmall(b *testing.B) {
	ix := build(b, testDocs, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ix.Search("帮我查一下明天的天气", 5)
	}
}

func TestEnglishCatalogNeverLoadsDictionary(t *testing.T) {
	seg := NewSegmenter("")
	ix := build(t, []Document{{Name: "getCurrentWeather", Description: "Get the current weather for a city."}}, &Config{Chinese: seg})
	if got := top(t, ix, "查天气", 3); len(got) != 1 {
		t.Fatalf("查天气: %v", got)
	}
	if seg.s.LoadTime() != 0 {
		t.Fatal("the Chinese dictionary was loaded for an English catalog")
	}
}

// topK against a full sort, with many ties, zero scores, the exact-name
// match anywhere (or scoring nothing) and k beyond the documents scored.
func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	sc := &scratch{} // one, reused as a pooled scratch is
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(60)
		ix := &Index{docs: make([]docInfo, n)}
		score := make([]float32, n)
		for d := range score {
			ix.docs[d].name = fmt.Sprintf("t%03d", r.IntN(1000)*1000+d)
			if r.IntN(4) > 0 {
				score[d] = float32(r.IntN(5)) // ties and zeros
			}
			if r.IntN(15) == 0 {
				score[d] = float32(math.NaN()) // weights that divide by zero: never a hit
			}
		}
		k := 1 + r.IntN(n+5)
		exact, hasExact := int32(r.IntN(n)), r.IntN(3) == 0
		var want []int32
		if hasExact {
			want = append(want, exact)
		}
		var all []int32
		for d := range score {
			if score[d] > 0 && !(hasExact && int32(d) == exact) {
				all = append(all, int32(d))
			}
		}
		sort.Slice(all, func(i, j int) bool {
			a, b := all[i], all[j]
			if score[a] != score[b] {
				return score[a] > score[b]
			}
			return ix.docs[a].name < ix.docs[b].name
		})
		want = append(want, all...)
		want = want[:min(k, len(want))]
		if got := ix.topK(score, k, exact, hasExact, sc); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("trial %d, k=%d, exact %v/%d: got %v, want %v (scores %v)", trial, k, hasExact, exact, got, want, score)
		}
	}
}

// A pooled scratch comes back with every score and mask bit cleared,
// whichever way put clears it (the documents the query's postings reached
// when they are few, the whole arrays otherwise), after queries of rare
// and common words, expansions, exact names, the re-rank and the
// diversified top; and a query's hits do not depend on the queries before.
func TestScratchComesBackClean(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	common := []string{"get", "list", "data", "file", "user", "report"}
	word := func(i int) string { // a word of its own per tool
		return "zq" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + "x"
	}
	var docs []Document
	for i := range 600 {
		docs = append(docs, Document{
			Name: fmt.Sprintf("tool_%s_%s", word(i), common[i%len(common)]),
			Description: fmt.Sprintf("%s %s the %s item for 天气 and %s",
				common[i%len(common)], common[(i/7)%len(common)], word(i), common[r.IntN(len(common))]),
		})
	}
	ix := build(t, docs, nil)
	var queries []string
	for range 300 {
		switch r.IntN(4) {
		case 0: // rare words: few postings, cleared one by one
			queries = append(queries, word(r.IntN(600))+" "+word(r.IntN(600)))
		case 1: // common words: most documents, cleared whole
			queries = append(queries, common[r.IntN(len(common))]+" "+common[r.IntN(len(common))]+" "+word(1))
		case 2: // an exact name
			queries = append(queries, docs[r.IntN(600)].Name)
		default: // Chinese, expanded to English
			queries = append(queries, "查天气 "+common[r.IntN(len(common))])
		}
	}
	first := map[string][]string{}
	var few, many int // queries whose postings put clears one by one, and the others
	for _, q := range queries {
		first[q] = top(t, ix, q, 5)
		sc := ix.scratch.Get().(*scratch)
		postings := 0
		for _, qt := range ix.queryTerms(q, sc) {
			postings += int(ix.start[qt.id+1] - ix.start[qt.id])
		}
		clear(sc.terms)
		ix.scratch.Put(sc)
		if postings < len(docs)/8 {
			few++
		} else {
			many++
		}
	}
	if few < 20 || many < 20 {
		t.Fatalf("%d queries with few postings, %d with many: both ways of clearing must be tried", few, many)
	}
	for i, q := range queries {
		if got := top(t, ix, queries[len(queries)-1-i], 5); !reflect.DeepEqual(got, first[queries[len(queries)-1-i]]) {
			t.Fatalf("%q after other queries: got %v, want %v", queries[len(queries)-1-i], got, first[queries[len(queries)-1-i]])
		}
		top(t, ix, q, 5)
		sc := ix.scratch.Get().(*scratch)
		for d := range sc.score {
			if sc.score[d] != 0 || sc.mask[d] != 0 {
				t.Fatalf("after %q: document %d left with score %v, mask %b", q, d, sc.score[d], sc.mask[d])
			}
		}
		ix.scratch.Put(sc)
	}
}

// seek finds the first posting at or after a document, from any start,
// against a linear scan.
func TestSeek(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 2000; trial++ {
		var docs []int32
		for d := int32(0); d < 300; d++ {
			if r.IntN(1+trial%7) == 0 {
				docs = append(docs, d)
			}
		}
		ix := &Index{pDoc: docs}
		end := int32(len(docs))
		at := int32(r.IntN(len(docs) + 1))
		d := int32(r.IntN(310))
		want := at
		for want < end && docs[want] < d {
			want++
		}
		if got := ix.seek(at, end, d); got != want {
			t.Fatalf("seek(%d, %d, %d) over %v = %d, want %d", at, end, d, docs, got, want)
		}
	}
}
