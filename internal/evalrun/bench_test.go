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
