package evalrun

import (
	"os"
	"path/filepath"
	"testing"
)

// The public evaluation sets live beside the repository (../shared/eval).
const sharedEval = "../../../shared/eval"

type floor struct {
	recall5, hit5, mrr float64
}

func evaluate(t *testing.T, tools, queries string) (ts, base Report) {
	t.Helper()
	tl, err := ReadTools(tools)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := ReadQueries(queries)
	if err != nil {
		t.Fatal(err)
	}
	s, err := BuildToolshed(tl, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := BuildBaseline(tl)
	ts, base = Run(s, qs), Run(b, qs)
	ts.Tools, base.Tools = len(tl), len(tl)
	return ts, base
}

func check(t *testing.T, name string, r, base Report, f floor) {
	t.Helper()
	t.Logf("%s: recall@5 %.4f (baseline %.4f), hit@5 %.4f (baseline %.4f), MRR %.4f (baseline %.4f), p50 %.1f µs",
		name, r.Recall["5"], base.Recall["5"], r.Hit["5"], base.Hit["5"], r.MRR, base.MRR, r.QueryUSP50)
	if r.Recall["5"] < f.recall5 || r.Hit["5"] < f.hit5 || r.MRR < f.mrr {
		t.Errorf("%s below its floor %+v", name, f)
	}
	if r.Recall["5"] < base.Recall["5"]+0.05 || r.MRR < base.MRR {
		t.Errorf("%s does not clearly beat the baseline", name)
	}
}

// TestChineseSet is the committed Chinese set: a regression floor a little
// under the measured figures (docs/SEARCH.md).
func TestChineseSet(t *testing.T) {
	r, base := evaluate(t, "../../search/testdata/zh-eval/tools.jsonl", "../../search/testdata/zh-eval/queries.jsonl")
	if r.Queries < 100 || r.Tools < 40 {
		t.Fatalf("set too small: %d queries, %d tools", r.Queries, r.Tools)
	}
	check(t, "zh-eval", r, base, floor{recall5: 0.70, hit5: 0.72, mrr: 0.60})
}

func TestPublicSets(t *testing.T) {
	for _, c := range []struct {
		set string
		f   floor
	}{
		{"seal-tools", floor{recall5: 0.87, hit5: 0.98, mrr: 0.95}},
		{"metatool", floor{recall5: 0.62, hit5: 0.62, mrr: 0.51}},
	} {
		dir := filepath.Join(sharedEval, c.set)
		if _, err := os.Stat(filepath.Join(dir, "tools.jsonl")); err != nil {
			t.Logf("SKIP %s: %v", c.set, err)
			continue
		}
		r, base := evaluate(t, filepath.Join(dir, "tools.jsonl"), filepath.Join(dir, "queries.jsonl"))
		check(t, c.set, r, base, c.f)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"name\":\"a\",\"description\":\"x\"}\n{\"name\":\"a\"}\n"), 0o644)
	if _, err := ReadTools(bad); err == nil || err.Error() != bad+`:2: tool "a" already defined on line 1` {
		t.Errorf("duplicate tool: %v", err)
	}
	os.WriteFile(bad, []byte("{\"query\":\"q\",\"tools\":[]}\n"), 0o644)
	if _, err := ReadQueries(bad); err == nil {
		t.Error("query without tools accepted")
	}
	os.WriteFile(bad, []byte("not json\n"), 0o644)
	if _, err := ReadTools(bad); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestRunMetrics(t *testing.T) {
	s := fixed{"q1": {"a", "b", "c"}, "q2": {"x", "y"}}
	r := Run(s, []Query{{Query: "q1", Tools: []string{"b", "z"}}, {Query: "q2", Tools: []string{"x"}}})
	if r.Recall["1"] != 0.5 || r.Recall["5"] != 0.75 || r.Hit["1"] != 0.5 || r.Hit["5"] != 1 || r.AllFound != 0.5 || r.MRR != 0.75 {
		t.Fatalf("metrics: %+v", r)
	}
}

type fixed map[string][]string

func (f fixed) Top(q string, k int) []string { return f[q] }
