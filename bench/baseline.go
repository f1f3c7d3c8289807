package main

import (
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
)

// The naive BM25 baseline of `toolshed eval --baseline` (docs/SEARCH.md):
// plain BM25 (k1 1.2, b 0.75) over one field, name + description,
// lowercased and cut at whitespace, punctuation and lower-to-upper case
// changes, every Chinese character a token. No stemming, stop words, field
// weights or expansion. It is the main module's own (internal/evalrun,
// importable here: this module's path is below the main module's), so its
// figures are those of `toolshed eval --baseline` on the same data.

func baselineEngine() engineSpec {
	return engineSpec{"naive BM25", func(tools []manifest.Tool, _ bool) (engine, error) {
		s, err := evalrun.BuildBaseline(tools)
		if err != nil {
			return nil, err
		}
		return searcher{s}, nil
	}}
}

// searcher is an evalrun.Searcher as an engine.
type searcher struct{ evalrun.Searcher }

func (s searcher) top(q string, k int) []string { return s.Top(q, k) }
