package evalrun

import (
	"context"
	"fmt"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/embed"
	"github.com/toolshed/toolshed/search"
)

// Embedder turns texts into vectors (an embed.Client, or a cache in
// front of one).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Semantic embeds a catalog's tools and the queries, as tool_search's
// semantic stage does (embed.ToolText), and returns each query's ranking
// of the search.CandidateDepth nearest tools, for Candidates.
func Semantic(ctx context.Context, e Embedder, tools []manifest.Tool, queries []Query) (func(q string) ([]string, error), error) {
	names := make([]string, len(tools))
	texts := make([]string, len(tools))
	for i, t := range tools {
		names[i], texts[i] = t.Name, embed.ToolText(t.Name, t.Description)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	vs, err := embed.NewVectors(names, vecs)
	if err != nil {
		return nil, err
	}
	qs := make([]string, len(queries))
	for i, q := range queries {
		qs[i] = q.Query
	}
	qv, err := e.Embed(ctx, qs)
	if err != nil {
		return nil, err
	}
	if len(qv) != len(qs) {
		return nil, fmt.Errorf("%d vectors for %d queries", len(qv), len(qs))
	}
	byQuery := make(map[string][]float32, len(qs))
	for i, q := range qs {
		byQuery[q] = qv[i]
	}
	return func(q string) ([]string, error) {
		v, ok := byQuery[q]
		if !ok {
			return nil, fmt.Errorf("no vector for %q", q)
		}
		return vs.Rank(v, search.CandidateDepth), nil
	}, nil
}
