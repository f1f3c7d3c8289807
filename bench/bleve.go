package main

import (
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bq "github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
)

// bleve, the peer engine: an in-memory scorch index with BM25 scoring.
// English catalogs use bleve's English analyzer (unicode words,
// possessives, lowercase, stop words, Porter stemmer); Chinese ones its
// CJK analyzer (bigrams).
//
// Three ways to query it:
//   - all: the six fields Toolshed indexes, one match query on the
//     composite _all field (bleve's default);
//   - fields: the same six fields, a disjunction of match queries, one per
//     field, boosted with Toolshed's field weights (search.DefaultWeights);
//   - three fields (the evaluation table's, `make eval`): name boosted 2,
//     description, and parameters (names and descriptions), a disjunction
//     of one match query per field. It takes nothing from Toolshed's
//     tuning, so it is the stock configuration a user would write.

// bleveField is one indexed field: its name, its boost in a per-field
// query, and its text for a tool (pn, pd: the parameters' names and
// descriptions).
type bleveField struct {
	name  string
	boost float64
	text  func(t manifest.Tool, pn, pd []string) string
}

// sixFields are Toolshed's fields with its boosts (search.DefaultWeights).
var sixFields = []bleveField{
	{"name", 3.0, func(t manifest.Tool, _, _ []string) string { return t.Name }},
	{"keywords", 2.5, func(t manifest.Tool, _, _ []string) string { return strings.Join(t.Keywords, "\n") }},
	{"examples", 1.5, func(t manifest.Tool, _, _ []string) string { return strings.Join(t.Examples, "\n") }},
	{"description", 1.0, func(t manifest.Tool, _, _ []string) string { return t.Description }},
	{"param_names", 0.6, func(_ manifest.Tool, pn, _ []string) string { return strings.Join(pn, "\n") }},
	{"param_descriptions", 0.4, func(_ manifest.Tool, _, pd []string) string { return strings.Join(pd, "\n") }},
}

// threeFields are the stock layout: name (boost 2), description,
// parameters.
var threeFields = []bleveField{
	{"name", 2, func(t manifest.Tool, _, _ []string) string { return t.Name }},
	{"description", 1, func(t manifest.Tool, _, _ []string) string {
		return strings.Join(append([]string{t.Description}, append(t.Keywords, t.Examples...)...), "\n")
	}},
	{"parameters", 1, func(_ manifest.Tool, pn, pd []string) string { return strings.Join(append(pn, pd...), "\n") }},
}

func bleveEngine(perField bool) engineSpec {
	name := "bleve (_all)"
	if perField {
		name = "bleve (fields)"
	}
	return engineSpec{name, func(tools []manifest.Tool, chinese bool) (engine, error) {
		return buildBleve(tools, chinese, sixFields, perField)
	}}
}

// bleve3Engine is the evaluation table's bleve: three fields, name boost 2.
func bleve3Engine() engineSpec {
	return engineSpec{"bleve", func(tools []manifest.Tool, chinese bool) (engine, error) {
		return buildBleve(tools, chinese, threeFields, true)
	}}
}

type bleveEngineImpl struct {
	ix       bleve.Index
	analyzer string
	fields   []bleveField
	perField bool
}

func buildBleve(tools []manifest.Tool, chinese bool, fields []bleveField, perField bool) (*bleveEngineImpl, error) {
	an := en.AnalyzerName
	if chinese {
		an = cjk.AnalyzerName
	}
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = an
	im.StoreDynamic = false
	dm := bleve.NewDocumentMapping()
	for _, f := range fields {
		fm := mapping.NewTextFieldMapping()
		fm.Analyzer = an
		fm.Store = false
		fm.IncludeTermVectors = false
		dm.AddFieldMappingsAt(f.name, fm)
	}
	im.DefaultMapping = dm
	ix, err := bleve.NewUsing("", im, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, err
	}
	b := ix.NewBatch()
	for _, t := range tools {
		var pn, pd []string
		for _, p := range catalog.SchemaParams(t.Parameters) {
			pn = append(pn, p.Name)
			pd = append(pd, p.Description)
		}
		d := make(map[string]any, len(fields))
		for _, f := range fields {
			d[f.name] = f.text(t, pn, pd)
		}
		if err := b.Index(t.Name, d); err != nil {
			return nil, err
		}
		if b.Size() >= 1000 {
			if err := ix.Batch(b); err != nil {
				return nil, err
			}
			b.Reset()
		}
	}
	if err := ix.Batch(b); err != nil {
		return nil, err
	}
	n, err := ix.DocCount()
	if err != nil || int(n) != len(tools) {
		return nil, fmt.Errorf("bleve holds %d documents of %d (%v)", n, len(tools), err)
	}
	return &bleveEngineImpl{ix: ix, analyzer: an, fields: fields, perField: perField}, nil
}

func (e *bleveEngineImpl) top(q string, k int) []string {
	var qu bq.Query
	if e.perField {
		var parts []bq.Query
		for _, f := range e.fields {
			m := bleve.NewMatchQuery(q)
			m.SetField(f.name)
			m.Analyzer = e.analyzer
			m.SetBoost(f.boost)
			parts = append(parts, m)
		}
		qu = bleve.NewDisjunctionQuery(parts...)
	} else {
		m := bleve.NewMatchQuery(q)
		m.Analyzer = e.analyzer
		qu = m
	}
	req := bleve.NewSearchRequestOptions(qu, k, 0, false)
	res, err := e.ix.Search(req)
	if err != nil {
		return nil
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}
