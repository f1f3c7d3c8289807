package host

import (
	"context"
	"slices"
	"testing"

	"github.com/toolshed/toolshed/internal/embed"
)

// lenEmbedder embeds a text as dim copies of its length, and records the
// texts it was asked for.
type lenEmbedder struct {
	dim   int
	asked []string
}

func (e *lenEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.asked = append(e.asked, texts...)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = make([]float32, e.dim)
		for j := range out[i] {
			out[i][j] = float32(len(t) + j)
		}
	}
	return out, nil
}

// TestEmbedReusing: texts the previous vectors hold are not asked for;
// when the endpoint's dimension changed, every text is.
func TestEmbedReusing(t *testing.T) {
	old := &lenEmbedder{dim: 2}
	vecs, _ := old.Embed(context.Background(), []string{"alpha", "beta"})
	v, err := embed.NewVectors([]string{"a", "b"}, vecs)
	if err != nil {
		t.Fatal(err)
	}
	prev := &semVectors{v: v, texts: []string{"alpha", "beta"}}

	e := &lenEmbedder{dim: 2}
	got, err := embedReusing(context.Background(), e, []string{"beta", "gamma", "alpha"}, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.asked, []string{"gamma"}) {
		t.Fatalf("asked for %q, want only the new text", e.asked)
	}
	if len(got) != 3 || !slices.Equal(got[0], v.At(1)) || !slices.Equal(got[2], v.At(0)) || got[1][0] != 5 {
		t.Fatalf("vectors %v", got)
	}

	e = &lenEmbedder{dim: 3} // the model changed
	got, err = embedReusing(context.Background(), e, []string{"beta", "gamma"}, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.asked, []string{"gamma", "beta", "gamma"}) || len(got[0]) != 3 || len(got[1]) != 3 {
		t.Fatalf("after a dimension change: asked %q, vectors %v", e.asked, got)
	}

	e = &lenEmbedder{dim: 2}
	if _, err := embedReusing(context.Background(), e, []string{"alpha"}, prev); err != nil || len(e.asked) != 0 {
		t.Fatalf("nothing new: asked %q, %v", e.asked, err)
	}
}
