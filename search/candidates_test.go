package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/tokens"
)

// candidateDocs is a catalog of n tools in a few plugins, with
// descriptions long enough that a list of full lines is cut by a budget.
func candidateDocs(n int) []Document {
	topics := []string{"weather forecast", "currency exchange rate", "flight booking", "stock price", "recipe search",
		"movie listings", "package tracking", "calendar event", "email message", "translation"}
	docs := make([]Document, n)
	for i := range docs {
		t := topics[i%len(topics)]
		docs[i] = Document{
			Name:   fmt.Sprintf("%sTool%d", strings.ReplaceAll(t, " ", "_"), i),
			Plugin: fmt.Sprintf("plugin%d", i%7),
			Description: fmt.Sprintf("Looks up the %s for a request number %d, with the details a user asks for. "+
				"Second sentence that a candidate line leaves out.", t, i),
		}
	}
	return docs
}

// allCandidates is the whole candidate order for q.
func allCandidates(ix *Index, q string) []string {
	var out []string
	ix.Candidates(q, nil, func(name string) bool { out = append(out, name); return true })
	return out
}

func tokenCount(line string) (int, error) { return tokens.Count(line) }

func describeFrom(docs []Document) func(string) (string, bool) {
	m := map[string]string{}
	for _, d := range docs {
		m[d.Name] = d.Description
	}
	return func(name string) (string, bool) { d, ok := m[name]; return d, ok }
}

func TestCandidatesOrder(t *testing.T) {
	docs := candidateDocs(600)
	ix := build(t, docs, nil)
	for _, q := range []string{"stock price of a company", "translation", "zzz qqq nothing matches", "executeSql", ""} {
		got := allCandidates(ix, q)
		if again := allCandidates(ix, q); !slices.Equal(got, again) {
			t.Fatalf("%q: two runs differ", q)
		}
		if len(got) != len(docs) {
			t.Fatalf("%q: %d candidates of %d tools", q, len(got), len(docs))
		}
		seen := map[string]bool{}
		for _, n := range got {
			if seen[n] {
				t.Fatalf("%q: %s listed twice", q, n)
			}
			seen[n] = true
		}
		// The keyword hits lead, by score.
		res, err := ix.search(q, CandidateDepth, false)
		if err != nil {
			t.Fatal(err)
		}
		if hits := hitNames(res); !slices.Equal(got[:len(hits)], hits) {
			t.Fatalf("%q: the list does not start with the keyword hits:\n%v\n%v", q, got[:len(hits)], hits)
		}
	}
}

func TestCandidateShortLine(t *testing.T) {
	for _, c := range []struct{ desc, want string }{
		{"Get the current weather for a city. More.", "f: Get the current weather\n"},
		{"  Get\tthe   current weather for a city", "f: Get the current weather\n"},
		{"Two words.", "f: Two words.\n"},
		{"", "f: \n"},
		{"查询快递包裹的物流状态和运单轨迹", "f: 查询快递包裹的物流状态和\n"},
		{"查询 weather 的天气预报和空气质量", "f: 查询 weather 的天气预报和空\n"},
	} {
		if got := CandidateShortLine("f", c.desc); got != c.want {
			t.Errorf("CandidateShortLine(%q) = %q; want %q", c.desc, got, c.want)
		}
	}
}

func TestFitCandidates(t *testing.T) {
	docs := candidateDocs(1500)
	ix := build(t, docs, nil)
	describe := describeFrom(docs)
	const budget = 6000
	for _, q := range []string{"stock price", "weather forecast for a city", "zzz qqq nothing matches"} {
		l, err := ix.FitCandidates(q, nil, 400, budget, describe, tokenCount)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := ix.FitCandidates(q, nil, 400, budget, describe, tokenCount)
		if !slices.Equal(l.Names, again.Names) || l.Text != again.Text {
			t.Fatalf("%q: two runs differ", q)
		}
		if len(l.Names) == 0 || len(l.Names) > 400 || l.Tokens > budget {
			t.Fatalf("%q: %d tools, %d tokens", q, len(l.Names), l.Tokens)
		}
		if n, _ := tokens.Count(l.Text); n > budget+len(l.Names) { // lines are counted one by one
			t.Fatalf("%q: the text is %d tokens, reported %d", q, n, l.Tokens)
		}
		all := allCandidates(ix, q)
		if !slices.Equal(l.Names, all[:len(l.Names)]) {
			t.Fatalf("%q: the list is not a prefix of the candidate order", q)
		}
		// Every tool a list of full lines would hold is there.
		used, full := 0, 0
		for _, n := range all {
			d, _ := describe(n)
			c, _ := tokens.Count(CandidateLine(n, d))
			if used+c > budget || full == 400 {
				break
			}
			used += c
			full++
		}
		if len(l.Names) <= full {
			t.Fatalf("%q: %d tools; full lines alone hold %d", q, len(l.Names), full)
		}
		// The head's lines are full, the tail's short.
		lines := strings.SplitAfter(l.Text, "\n")
		lines = lines[:len(lines)-1]
		if len(lines) != len(l.Names) || l.Full < CandidateFull || l.Full >= len(l.Names) {
			t.Fatalf("%q: %d lines, %d names, %d full", q, len(lines), len(l.Names), l.Full)
		}
		for i, n := range l.Names {
			d, _ := describe(n)
			want := CandidateLine(n, d)
			if i >= l.Full {
				want = CandidateShortLine(n, d)
			}
			if lines[i] != want {
				t.Fatalf("%q: line %d is %q; want %q", q, i, lines[i], want)
			}
		}
	}
	// A list that fits with full lines keeps them all; unknown tools are
	// left out; the tool bound holds.
	small := candidateDocs(40)
	ix = build(t, small, nil)
	l, err := ix.FitCandidates("stock price", nil, 400, budget, describeFrom(small), tokenCount)
	if err != nil || len(l.Names) != 40 || l.Full != 40 {
		t.Fatalf("small catalog: %d tools, %d full, %v", len(l.Names), l.Full, err)
	}
	skip := func(name string) (string, bool) {
		if strings.HasPrefix(name, "stock") {
			return "", false
		}
		return describeFrom(small)(name)
	}
	if l, _ = ix.FitCandidates("stock price", nil, 10, budget, skip, tokenCount); len(l.Names) != 10 || slices.ContainsFunc(l.Names, func(n string) bool { return strings.HasPrefix(n, "stock") }) {
		t.Fatalf("with stock tools unknown and 10 at most: %v", l.Names)
	}
	if _, err := ix.FitCandidates("stock price", nil, 10, budget, skip, func(string) (int, error) { return 0, fmt.Errorf("no vocabulary") }); err == nil {
		t.Fatal("a failing count gave no error")
	}
}

// TestFitCandidatesGroups: tools whose first sentences match (case,
// spacing and closing punctuation aside) share a line placed where the
// first of them comes; the list holds every tool the ungrouped order
// reaches before it, and more; the text is what Names and the budget say.
func TestFitCandidatesGroups(t *testing.T) {
	var docs []Document
	for i := range 1200 {
		topic := []string{"stock price", "weather forecast", "flight booking"}[i%3]
		d := Document{Name: fmt.Sprintf("%sTool%d", strings.ReplaceAll(topic, " ", "_"), i), Plugin: "p",
			Description: fmt.Sprintf("Looks up the %s for request number %d, with the details a user asks for. More.", topic, i)}
		if i%4 == 0 { // a family of near-copies: one sentence, cased and ended differently
			d.Description = []string{"Gets the stock price of a company.", "gets the STOCK price  of a company", "Gets the stock price of a company!"}[i%3] +
				fmt.Sprintf(" Copy %d.", i)
		}
		docs = append(docs, d)
	}
	ix := build(t, docs, nil)
	describe := describeFrom(docs)
	const budget = 3000
	l, err := ix.FitCandidates("stock price of a company", nil, 1000, budget, describe, tokenCount)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(l.Text, "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != l.Lines || l.Lines >= len(l.Names) {
		t.Fatalf("%d lines of text, Lines %d, %d tools", len(lines), l.Lines, len(l.Names))
	}
	family := 0
	var listed []string
	for _, line := range lines {
		names, _, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("line %q has no \": \"", line)
		}
		group := strings.Split(names, ", ")
		listed = append(listed, group...)
		if len(group) > 1 {
			family++
			for _, n := range group {
				if d, _ := describe(n); summaryKey(d) != "gets the stock price of a company" {
					t.Fatalf("%s (%q) shares the line %q", n, d, line)
				}
			}
		}
	}
	if family != 1 || !slices.Equal(listed, l.Names) {
		t.Fatalf("%d lines of several tools; names on the lines %v…, Names %v…", family, listed[:5], l.Names[:5])
	}
	if n, _ := tokens.Count(l.Text); l.Tokens > budget || n > budget+len(l.Names) {
		t.Fatalf("%d tokens counted, %d in the text; budget %d", l.Tokens, n, budget)
	}
	// The family's line stands where its first tool comes in the order,
	// and every tool the order reaches before the list's last is listed.
	order := allCandidates(ix, "stock price of a company")
	in := map[string]bool{}
	for _, n := range l.Names {
		in[n] = true
	}
	last := 0
	for i, n := range order {
		if in[n] {
			last = i
		}
	}
	for _, n := range order[:last] {
		if !in[n] {
			t.Fatalf("%s comes before the list's last tool but is not listed", n)
		}
	}
	if len(l.Names) <= l.Lines+50 {
		t.Fatalf("%d tools on %d lines: the family did not share", len(l.Names), l.Lines)
	}
	// Ungrouped, the same budget holds fewer tools.
	var plain []Document
	for i, d := range docs {
		d.Description = fmt.Sprintf("Distinct %d: ", i) + d.Description
		plain = append(plain, d)
	}
	if p, _ := build(t, plain, nil).FitCandidates("stock price of a company", nil, 1000, budget, describeFrom(plain), tokenCount); len(p.Names) >= len(l.Names) {
		t.Fatalf("ungrouped: %d tools; grouped: %d", len(p.Names), len(l.Names))
	}
}

// TestFitCandidatesNoDescriptions: a catalog of tools without a
// description (hostile or careless) makes one line of names, cut by the
// budget and the tool bound, and quickly.
func TestFitCandidatesNoDescriptions(t *testing.T) {
	docs := make([]Document, 5000)
	for i := range docs {
		docs[i] = Document{Name: fmt.Sprintf("tool%d", i), Plugin: "p"}
	}
	ix := build(t, docs, nil)
	for _, c := range []struct{ max, budget int }{{1000, 6000}, {5000, 1000}, {10, 6000}} {
		l, err := ix.FitCandidates("anything", nil, c.max, c.budget, describeFrom(docs), tokenCount)
		if err != nil {
			t.Fatal(err)
		}
		if l.Lines != 1 || len(l.Names) == 0 || len(l.Names) > c.max || l.Tokens > c.budget || strings.Count(l.Text, "\n") != 1 {
			t.Fatalf("max %d, budget %d: %d tools on %d lines, %d tokens", c.max, c.budget, len(l.Names), l.Lines, l.Tokens)
		}
		if n, _ := tokens.Count(l.Text); n > c.budget+len(l.Names) {
			t.Fatalf("max %d, budget %d: the text is %d tokens", c.max, c.budget, n)
		}
	}
}

// BenchmarkCandidates is the cost of one candidate list on a catalog of
// 10,000 tools: the order alone, the list of full lines as tool_search
// built it before (each line counted, until 6,000 tokens or 400 tools),
// and the fitted list.
func BenchmarkCandidates(b *testing.B) {
	docs := candidateDocs(10_000)
	ix := build(b, docs, nil)
	describe := describeFrom(docs)
	const q = "what is the stock price and the exchange rate today"
	b.Run("order", func(b *testing.B) {
		for b.Loop() {
			n := 0
			ix.Candidates(q, nil, func(string) bool { n++; return n < 400 })
		}
	})
	b.Run("full-lines", func(b *testing.B) {
		for b.Loop() {
			used, n := 0, 0
			ix.Candidates(q, nil, func(name string) bool {
				d, _ := describe(name)
				c, _ := tokens.Count(CandidateLine(name, d))
				if n >= 400 || used+c > 6000 {
					return false
				}
				used += c
				n++
				return true
			})
		}
	})
	b.Run("fitted", func(b *testing.B) {
		for b.Loop() {
			if _, err := ix.FitCandidates(q, nil, 400, 6000, describe, tokenCount); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCandidatesSemantic: a semantic ranking is taken in turn with the
// keyword hits (keyword first), each tool once; names the index does not
// hold, or holds under another spelling, are skipped; the rest of the
// pool follows, so the list still holds every tool.
func TestCandidatesSemantic(t *testing.T) {
	docs := candidateDocs(600)
	ix := build(t, docs, nil)
	q := "stock price of a company"
	keyword := allCandidates(ix, q)
	var hits []string // the keyword hits lead the plain order
	for _, n := range keyword {
		if !strings.HasPrefix(n, "stock_price") {
			break
		}
		hits = append(hits, n)
	}
	if len(hits) < 3 {
		t.Fatalf("keyword hits %v", hits)
	}
	semantic := []string{"translationTool9", "no_such_tool", hits[1], "TRANSLATIONTOOL19", "recipe_searchTool4"}
	var got []string
	ix.Candidates(q, semantic, func(name string) bool { got = append(got, name); return true })
	want := []string{hits[0], "translationTool9", hits[1], hits[2], "recipe_searchTool4", hits[3]}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("order starts %v, want %v", got[:len(want)], want)
	}
	if len(got) != len(docs) {
		t.Fatalf("%d candidates of %d tools", len(got), len(docs))
	}
	seen := map[string]bool{}
	for _, n := range got {
		if seen[n] {
			t.Fatalf("%s listed twice", n)
		}
		seen[n] = true
	}
	// No keyword hit: the semantic ranking leads.
	got = got[:0]
	ix.Candidates("zzz qqq", semantic, func(name string) bool { got = append(got, name); return len(got) < 3 })
	if !slices.Equal(got, []string{"translationTool9", hits[1], "recipe_searchTool4"}) {
		t.Fatalf("without keyword hits: %v", got)
	}
	// The fitted list holds the semantic tools near its head.
	l, err := ix.FitCandidates("zzz qqq", semantic, 50, 6000, describeFrom(docs), tokenCount)
	if err != nil || !slices.Equal(l.Names[:3], []string{"translationTool9", hits[1], "recipe_searchTool4"}) {
		t.Fatalf("fitted list %v, %v", l.Names[:min(5, len(l.Names))], err)
	}
}
