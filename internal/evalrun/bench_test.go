package evalrun

import (
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/search"
)

// Benchmarks on Seal-Tools (4,076 tools), skipped where the set is absent.
// Compare with: go test -run '^$' -bench . ./internal/evalrun

func sealData(b *testing.B) ([]Query, func() (Searcher, error), func() (Searcher, error)) {
	dir := filepath.Join(sharedEval, "seal-tools")
	tools, err := ReadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		b.Skipf("seal-tools not found: %v", err)
	}
	qs, err := ReadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	return qs, func() (Searcher, error) { return BuildToolshed(tools, nil) }, func() (Searcher, error) { return BuildBaseline(tools) }
}

func benchQueries(b *testing.B, build func() (Searcher, error), qs []Query) {
	s, err := build()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Top(qs[i%len(qs)].Query, 10)
	}
}

func BenchmarkSealQueryToolshed(b *testing.B) {
	qs, ts, _ := sealData(b)
	benchQueries(b, ts, qs)
}

func BenchmarkSealQueryBaseline(b *testing.B) {
	qs, _, bl := sealData(b)
	benchQueries(b, bl, qs)
}

func BenchmarkSealIndexToolshed(b *testing.B) {
	_, ts, _ := sealData(b)
	for i := 0; i < b.N; i++ {
		if _, err := ts(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSealIndexBaseline(b *testing.B) {
	_, _, bl := sealData(b)
	for i := 0; i < b.N; i++ {
		bl()
	}
}

// BenchmarkSegmenterLoad is the one-time cost of the embedded Chinese
// dictionary (a fresh segmenter each time).
func BenchmarkSegmenterLoad(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := search.NewSegmenter("").Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkZhQueryToolshed: the Chinese set's queries (57 tools).
func BenchmarkZhQueryToolshed(b *testing.B) {
	dir := filepath.Join("..", "..", "search", "testdata", "zh-eval")
	tools, err := ReadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	qs, err := ReadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	benchQueries(b, func() (Searcher, error) { return BuildToolshed(tools, nil) }, qs)
}

// BenchmarkMetaQueryToolshed: MetaTool's queries (199 tools), skipped where
// the set is absent.
func BenchmarkMetaQueryToolshed(b *testing.B) {
	dir := filepath.Join(sharedEval, "metatool")
	tools, err := ReadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		b.Skipf("metatool not found: %v", err)
	}
	qs, err := ReadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	benchQueries(b, func() (Searcher, error) { return BuildToolshed(tools, nil) }, qs)
}

// BenchmarkRanking: one query of the ToolEyes set over a catalog padded to
// 10,000 tools with the other converted sets' tools, for each stage of the
// ranking: BM25F alone, with the diversified top, the default (the
// diversified top after the name_behind re-rank of its pool: 40 tools for
// the 10 hits asked for here), and the six-feature learned re-rank of the
// best 100 (off by default).
func BenchmarkRanking(b *testing.B) {
	root := filepath.Join("..", "..", "bench", "testdata", "eval")
	var sets []NamedSet
	for _, name := range []string{"tooleyes", "acebench-en", "api-bank", "callnavi", "nestools", "toolalpaca"} {
		tools, err := ReadTools(filepath.Join(root, name, "tools.jsonl"))
		if err != nil {
			b.Skipf("%s: %v", name, err)
		}
		qs, err := ReadQueries(filepath.Join(root, name, "queries.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		sets = append(sets, NamedSet{Name: name, Tools: tools, Queries: qs})
	}
	cat := Pad(sets[0].Tools, PadPool(sets[0].Name, sets[0].Queries, sets), 10_000, Recombined)
	plain := search.DefaultWeights
	plain.Overlap, plain.Rerank = 0, [search.NumFeatures]float64{}
	diverse := plain
	diverse.Overlap = search.DefaultWeights.Overlap // the default's diversified top, without its re-rank
	learned := plain
	learned.Rerank = [search.NumFeatures]float64{0.5, 0.5, -0.625, -0.0625, 0.5625, 0.3125}
	learned.RerankDepth = 100
	for _, c := range []struct {
		name string
		w    search.Weights
	}{{"bm25f", plain}, {"diversified", diverse}, {"default", search.DefaultWeights}, {"learned", learned}} {
		b.Run(c.name, func(b *testing.B) {
			w := c.w
			benchQueries(b, func() (Searcher, error) { return BuildToolshed(cat, &search.Config{Weights: &w}) }, sets[0].Queries)
		})
	}
}
