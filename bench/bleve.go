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

// bleve, the peer engine: an in-memory scorch index with BM25 scoring and
// the same six fields Toolshed indexes. English catalogs use bleve's
// English analyzer (unicode words, possessives, lowercase, stop words,
// Porter stemmer); the Chinese set uses its CJK analyzer (bigrams).
//
// Two ways to query it:
//   - all: one match query on the composite _all field (bleve's default);
//   - fields: a disjunction of match queries, one per field, boosted with
//     Toolshed's field weights (search.DefaultWeights).

type bleveDoc struct {
	Name        string `json:"name"`
	Keywords    string `json:"keywords"`
	Examples    string `json:"examples"`
	Description string `json:"description"`
	ParamNames  string `json:"param_names"`
	ParamDescs  string `json:"param_descriptions"`
}

// bleveFields and their boosts, as in search.DefaultWeights.
var bleveFields = []struct {
	name  string
	boost float64
}{{"name", 3.0}, {"keywords", 2.5}, {"examples", 1.5}, {"description", 1.0}, {"param_names", 0.6}, {"param_descriptions", 0.4}}

func bleveEngine(perField bool) engineSpec {
	name := "bleve (_all)"
	if perField {
		name = "bleve (fields)"
	}
	return engineSpec{name, func(tools []manifest.Tool, chinese bool) (engine, error) {
		return buildBleve(tools, chinese, perField)
	}}
}

type bleveEngineImpl struct {
	ix       bleve.Index
	analyzer string
	perField bool
}

func buildBleve(tools []manifest.Tool, chinese, perField bool) (*bleveEngineImpl, error) {
	an := en.AnalyzerName
	if chinese {
		an = cjk.AnalyzerName
	}
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = an
	im.StoreDynamic = false
	dm := bleve.NewDocumentMapping()
	for _, f := range bleveFields {
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
		d := bleveDoc{Name: t.Name, Keywords: strings.Join(t.Keywords, "\n"), Examples: strings.Join(t.Examples, "\n"), Description: t.Description}
		var pn, pd []string
		for _, p := range catalog.SchemaParams(t.Parameters) {
			pn = append(pn, p.Name)
			pd = append(pd, p.Description)
		}
		d.ParamNames, d.ParamDescs = strings.Join(pn, "\n"), strings.Join(pd, "\n")
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
	return &bleveEngineImpl{ix: ix, analyzer: an, perField: perField}, nil
}

func (e *bleveEngineImpl) top(q string, k int) []string {
	var qu bq.Query
	if e.perField {
		var parts []bq.Query
		for _, f := range bleveFields {
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
