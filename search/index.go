// Package search finds tools by keyword: a BM25F index over tool names,
// keywords, example queries, descriptions and parameters, with Chinese
// segmentation and Chinese↔English query expansion.
//
// Build an Index once from a catalog's documents; it is immutable and safe
// for concurrent use by any number of goroutines. Rankings are deterministic:
// equal scores are ordered by tool name.
package search

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/internal/names"
	"github.com/toolshed/toolshed/search/internal/text"
)

// Document is one tool as the index sees it.
type Document struct {
	Name        string
	Plugin      string
	Description string
	Keywords    []string // aliases and keywords, any language
	Examples    []string // example requests the tool serves
	Params      []Param
}

// Param is one parameter of a tool: its name and description.
type Param struct {
	Name        string
	Description string
}

// Hit is one result.
type Hit struct {
	Name    string
	Plugin  string
	Score   float64
	Matched []string // index terms that matched, in query order; expansions as "term←source"
}

// Result is the answer to a query.
type Result struct {
	Hits []Hit
	// Unknown lists names of a "select:" query that no tool has.
	Unknown []string
}

// ErrQueryTooLong is returned for a query over MaxQueryBytes.
var ErrQueryTooLong = fmt.Errorf("search: query longer than %d bytes", MaxQueryBytes)

const (
	// MaxQueryBytes bounds a query.
	MaxQueryBytes = 4096
	// DefaultLimit is the number of hits returned when limit is zero or less.
	DefaultLimit = 5
	// maxQueryTerms bounds how many distinct terms of a query are scored.
	maxQueryTerms = 64
	// maskTerms is how many query terms Hit.Matched can report (the
	// query's own terms come first).
	maskTerms = 32
	// maxNameQuery bounds the queries tried as an exact tool name.
	maxNameQuery = 128
)

// field indexes.
const (
	fName = iota
	fKeywords
	fExamples
	fDescription
	fParamName
	fParamDesc
	numFields
)

var fieldNames = [numFields]string{"name", "keywords", "examples", "description", "param_names", "param_descriptions"}

// Weights are BM25F's per-field weights and length normalisation, and the
// weights of expanded query terms.
type Weights struct {
	Field [numFields]float64
	B     [numFields]float64
	K1    float64
	// Expansion weighs a lexicon term in the other language (天气 → weather).
	Expansion float64
	// Synonym weighs a lexicon synonym in the query's own language
	// (气象 → 天气, fetch → retrieve); 0 turns it off.
	Synonym float64
	// Overlap is what a query term matched by a higher hit still counts
	// for in the ranking of the hits below it, per such hit (diversify.go);
	// 1 or 0 turns the re-rank off.
	Overlap float64
	// Novel is the share of the best hit's score that terms no higher hit
	// matched must give a hit for it to move up.
	Novel float64
	// Siblings is how many hits may match a term before it counts for
	// less (at least 1).
	Siblings int
	// Pool is how many hits per hit asked for are re-ranked (at least 16
	// more than asked for).
	Pool int
	// PerField scores each field with its own BM25 saturation and length
	// normalisation and sums the fields' scores, each times its weight
	// (1: one IDF per term; 2: each field's own IDF), instead of BM25F's
	// one saturation of the fields' weighted frequencies (0).
	PerField int
	// Coord multiplies a tool's score by the share of the query's own
	// terms it matched, to this power (0: off).
	Coord float64
	// Rerank weighs the re-rank features (rerank.go, FeatureNames) of the
	// best RerankDepth tools (0: 100); all zero turns the re-rank off.
	// The features' data is built only when a weight or the depth is set.
	Rerank      [NumFeatures]float64
	RerankDepth int
}

// DefaultWeights are the weights tuned on the evaluation sets (docs/SEARCH.md).
var DefaultWeights = Weights{
	//        name keywords examples desc pname pdesc
	Field:     [numFields]float64{3.0, 2.5, 1.5, 1.0, 0.6, 0.4},
	B:         [numFields]float64{0.5, 0.5, 0.6, 0.75, 0.9, 0.9},
	K1:        1.2,
	Expansion: 0.4,
	Synonym:   0.2,
	Overlap:   0.5,
	Novel:     0.25,
	Siblings:  3,
	Pool:      4,
	// The re-rank by one feature, name_behind: among the best 21 by
	// score (the diversified top's pool for 5 hits; more when more are
	// asked for), a tool whose name adds words to a name that matches the
	// same request words falls behind it (docs/SEARCH.md, "Ranking").
	// The six-feature learned re-rank stays off: its fitted weights gain
	// 4.1 points on average on the test halves but lose more than half a
	// point on 8 of 67 cells, which the rule forbids.
	Rerank:      [NumFeatures]float64{ftNameBehind: 0.15},
	RerankDepth: 21,
}

// defaultRerankDepth is how many tools the re-rank sees when
// Weights.RerankDepth is 0.
const defaultRerankDepth = 100

// Index is an immutable search index. It is safe for concurrent use.
type Index struct {
	docs   []docInfo
	exact  map[string]int32 // folded tool name → doc
	terms  map[string]int32
	start  []int32 // postings of term t: [start[t], start[t+1])
	pDoc   []int32
	pW     []float32
	exp    *expander
	words  map[string][]target // ASCII word → its terms, for queries
	an     *text.Analyzer
	hasHan bool
	// nonASCIINames: some tool name is not ASCII, so a query that is not
	// may still be one.
	nonASCIINames bool
	build         time.Duration
	overlap       float32 // Weights.Overlap; 0: no re-rank
	pool          int
	novel         float32
	siblings      int
	// coordOn: Weights.Coord is set (applyCoord).
	coordOn bool
	coordP  float64
	// The re-rank (rerank.go): each tool's name terms (nameTerms[nameStart[d]:nameStart[d+1]]),
	// its length in terms and the mean length; the weights.
	nameStart   []int32
	nameTerms   []int32
	docLen      []float32
	avgLen      float64
	rerankW     [NumFeatures]float32
	rerankOn    bool
	rerankDepth int
	hasFeatures bool // the re-rank's data is built (Weights.Rerank or RerankDepth set)
	scratch     sync.Pool
}

type docInfo struct {
	name, plugin string
}

// Config adjusts how an index is built. The zero value is the default.
type Config struct {
	// Weights overrides DefaultWeights when not nil.
	Weights *Weights
	// Chinese is the segmenter for Chinese text; nil uses the shared one
	// with the embedded compact dictionary.
	Chinese *Segmenter
	// Lexicons are extra Chinese↔English lexicon files, added to the
	// built-in one.
	Lexicons []string
	// NoLexicon turns off cross-language expansion (for measurements).
	NoLexicon bool
	// NoBigrams turns off Chinese character bigrams (for measurements).
	NoBigrams bool
}

// Build indexes docs. Tool names must be unique and non-empty.
func Build(docs []Document, cfg *Config) (*Index, error) {
	start := time.Now()
	if cfg == nil {
		cfg = &Config{}
	}
	w := DefaultWeights
	if cfg.Weights != nil {
		w = *cfg.Weights
	}
	seg := cfg.Chinese
	if seg == nil {
		seg = DefaultSegmenter()
	}
	ix := &Index{
		docs:  make([]docInfo, len(docs)),
		exact: make(map[string]int32, len(docs)),
		terms: map[string]int32{},
		an:    &text.Analyzer{Chinese: seg.s, NoBigrams: cfg.NoBigrams},
	}
	for _, d := range docs {
		if text.HasHan(d.Name + d.Description + strings.Join(d.Keywords, "") + strings.Join(d.Examples, "")) {
			ix.hasHan = true
			break
		}
	}
	if ix.hasHan {
		seg.s.Preload()
	} else {
		// Nothing to match Chinese words against: queries in Chinese are
		// still expanded through the lexicon, without loading a dictionary.
		ix.an.Chinese = nil
	}
	ix.an.Memoize()
	ix.hasFeatures = w.RerankDepth > 0 || w.Rerank != [NumFeatures]float64{}

	type tfEntry struct {
		term int32
		tf   [numFields]float32
	}
	perDoc := make([][]tfEntry, len(docs))
	var fieldLen [numFields][]float32
	for f := range fieldLen {
		fieldLen[f] = make([]float32, len(docs))
	}
	var termDocs []int32             // document frequency by term
	var fieldDocs [numFields][]int32 // document frequency by term, per field (PerField 2 only)
	for i, d := range docs {
		if d.Name == "" {
			return nil, errors.New("search: document with an empty name")
		}
		key := foldName(d.Name)
		if _, dup := ix.exact[key]; dup {
			return nil, fmt.Errorf("search: duplicate tool name %q", d.Name)
		}
		ix.exact[key] = int32(i)
		if !text.IsASCII(key) {
			ix.nonASCIINames = true
		}
		ix.docs[i] = docInfo{name: d.Name, plugin: d.Plugin}
		if ix.hasFeatures {
			ix.nameStart = append(ix.nameStart, int32(len(ix.nameTerms)))
		}
		local := map[int32]int{}
		add := func(f int, s string) {
			ix.an.Each(s, func(t string) {
				id, ok := ix.terms[t]
				if !ok {
					id = int32(len(ix.terms))
					ix.terms[t] = id
					termDocs = append(termDocs, 0)
					if w.PerField == 2 {
						for f := range fieldDocs {
							fieldDocs[f] = append(fieldDocs[f], 0)
						}
					}
				}
				k, ok := local[id]
				if !ok {
					k = len(perDoc[i])
					local[id] = k
					perDoc[i] = append(perDoc[i], tfEntry{term: id})
					termDocs[id]++
				}
				if w.PerField == 2 && perDoc[i][k].tf[f] == 0 {
					fieldDocs[f][id]++
				}
				perDoc[i][k].tf[f]++
				fieldLen[f][i]++
			})
		}
		add(fName, d.Name)
		if ix.hasFeatures {
			// The name's words for the re-rank, without the joined
			// identifier the analyzer adds (no request says
			// "getweatherforecast"). Unrecorded: the words of a split
			// name (a distractor's "books12345") would otherwise stay in
			// the analyzer's memo and the query word table for good (35
			// MiB over 100,000 tools).
			ix.an.EachUnrecorded(nameWords(d.Name), func(t string) {
				if id, ok := ix.terms[t]; ok {
					ix.nameTerms = append(ix.nameTerms, id)
				}
			})
		}
		for _, k := range d.Keywords {
			add(fKeywords, k)
		}
		for _, e := range d.Examples {
			add(fExamples, e)
		}
		add(fDescription, d.Description)
		for _, p := range d.Params {
			add(fParamName, p.Name)
			add(fParamDesc, p.Description)
		}
	}
	if ix.hasFeatures {
		ix.nameStart = append(ix.nameStart, int32(len(ix.nameTerms)))
		ix.docLen = make([]float32, len(docs))
		for f := range fieldLen {
			for i, l := range fieldLen[f] {
				ix.docLen[i] += l
			}
		}
		for _, l := range ix.docLen {
			ix.avgLen += float64(l)
		}
		if len(docs) > 0 {
			ix.avgLen /= float64(len(docs))
		}
	}
	var avg [numFields]float64
	for f := range avg {
		var sum float64
		for _, l := range fieldLen[f] {
			sum += float64(l)
		}
		if len(docs) > 0 {
			avg[f] = sum / float64(len(docs))
		}
		if avg[f] == 0 {
			avg[f] = 1
		}
	}
	// Postings, grouped by term, documents ascending within a term.
	n := float64(len(docs))
	ix.start = make([]int32, len(ix.terms)+1)
	for _, entries := range perDoc {
		for _, e := range entries {
			ix.start[e.term+1]++
		}
	}
	for t := 1; t < len(ix.start); t++ {
		ix.start[t] += ix.start[t-1]
	}
	total := ix.start[len(ix.start)-1]
	ix.pDoc = make([]int32, total)
	ix.pW = make([]float32, total)
	fill := append([]int32(nil), ix.start[:len(ix.start)-1]...)
	for i, entries := range perDoc {
		for _, e := range entries {
			df := float64(termDocs[e.term])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			var tf, sum float64
			for f := 0; f < numFields; f++ {
				if e.tf[f] == 0 {
					continue
				}
				norm := 1 - w.B[f] + w.B[f]*float64(fieldLen[f][i])/avg[f]
				if w.PerField == 0 {
					tf += w.Field[f] * float64(e.tf[f]) / norm
					continue
				}
				fidf := idf
				if w.PerField == 2 {
					fdf := float64(fieldDocs[f][e.term])
					fidf = math.Log(1 + (n-fdf+0.5)/(fdf+0.5))
				}
				t := float64(e.tf[f])
				sum += w.Field[f] * fidf * t / (t + w.K1*norm)
			}
			k := fill[e.term]
			fill[e.term]++
			ix.pDoc[k] = int32(i)
			if w.PerField == 0 {
				ix.pW[k] = float32(idf * tf / (w.K1 + tf))
			} else {
				ix.pW[k] = float32(sum)
			}
		}
	}
	if !cfg.NoLexicon {
		exp, err := newExpander(ix, cfg.Lexicons, w.Expansion, w.Synonym)
		if err != nil {
			return nil, err
		}
		ix.exp = exp
	}
	ix.an.Freeze()
	ix.words = map[string][]target{}
	ix.an.Memo(func(w string, _ []string) { ix.words[w] = ix.wordTerms(w) })
	ix.scratch.New = func() any {
		return &scratch{score: make([]float32, len(ix.docs)), mask: make([]uint32, len(ix.docs)), slot: make([]int32, len(ix.terms)),
			terms: make([]queryTerm, 0, maxQueryTerms), own: make([]string, 0, 32), label: make([]string, maskTerms)}
	}
	if w.Overlap > 0 && w.Overlap < 1 {
		ix.overlap, ix.pool, ix.novel = float32(w.Overlap), max(w.Pool, 1), float32(w.Novel)
		ix.siblings = max(w.Siblings, 1)
	}
	if w.Coord > 0 {
		ix.coordOn, ix.coordP = true, w.Coord
	}
	for k, v := range w.Rerank {
		ix.rerankW[k] = float32(v)
	}
	ix.rerankOn = w.Rerank != [NumFeatures]float64{}
	ix.rerankDepth = w.RerankDepth
	if ix.rerankDepth <= 0 {
		ix.rerankDepth = defaultRerankDepth
	}
	ix.build = time.Since(start)
	return ix, nil
}

// Len reports the number of indexed tools.
func (ix *Index) Len() int { return len(ix.docs) }

// Terms reports the number of distinct terms in the index.
func (ix *Index) Terms() int { return len(ix.terms) }

// BuildTime reports how long Build took.
func (ix *Index) BuildTime() time.Duration { return ix.build }

// foldName is the key for exact-name matches.
func foldName(s string) string { return names.Fold(s) }

// scratch is one query's accumulators, pooled: a running score per
// document, and which of the first maskTerms query terms it matched.
// Scores stay a dense float32 array so the top-k scan reads little memory.
type scratch struct {
	score []float32
	mask  []uint32
	slot  []int32 // term → 1 + its place in the query's terms (queryTerms)
	terms []queryTerm
	own   []string
	label []string // a query term's label, once a hit needs it
	// feat, idf, cands, mult and best are rerank's.
	feat  [][NumFeatures]float32
	idf   []float32
	cands []rerankCand
	mult  []float32
	best  []float32
	// topScore is topK's: the scores of the documents it keeps.
	topScore []float32
	// contrib and used are diversify's.
	contrib    []float32
	order      []int32
	key, novel []float32
	used       []bool
}

type queryTerm struct {
	id     int32
	weight float32
	term   string
	source string // the query word an expansion came from; "" for the query's own terms
}

func (t queryTerm) label() string {
	if t.source == "" {
		return t.term
	}
	return t.term + "←" + t.source
}

// Search runs a query and returns at most limit hits (DefaultLimit when
// limit <= 0), best first.
//
// A query of the form "select:name1,name2" returns exactly those tools, in
// that order. A query equal to a tool's name (ignoring case and _ - .
// separators) puts that tool first.
func (ix *Index) Search(query string, limit int) (Result, error) {
	return ix.search(query, limit, true)
}

// search is Search; rerank false leaves out the diversified top (a long
// list for a selection model is ordered by score alone).
func (ix *Index) search(query string, limit int, rerank bool) (Result, error) {
	if len(query) > MaxQueryBytes {
		return Result{}, ErrQueryTooLong
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	// No list is longer than the catalog: a huge limit costs nothing (and
	// the diversified top's pool, a multiple of it, cannot overflow).
	limit = min(limit, max(len(ix.docs), 1))
	q := strings.TrimSpace(query)
	if rest, ok := cutPrefixFold(q, "select:"); ok {
		return ix.selectNames(rest), nil
	}

	// sc goes back to the pool clean at the end (put); a query that panics
	// drops it instead.
	sc := ix.scratch.Get().(*scratch)
	qs, exact, hasExact := ix.accumulate(q, sc)
	score, mask := sc.score, sc.mask
	var top []int32
	diverse := rerank && ix.overlap > 0 && len(qs) > 1 && limit > 1
	depth := limit
	if diverse {
		depth = max(limit*ix.pool, limit+16)
	}
	var mult []float32
	if rerank && ix.rerankOn && len(qs) > 0 {
		top = ix.rerank(ix.topK(score, max(depth, ix.rerankDepth), exact, hasExact, sc), qs, score, mask, hasExact, sc)
		top, mult = top[:min(depth, len(top))], sc.mult[:min(depth, len(top))]
	} else {
		top = ix.topK(score, depth, exact, hasExact, sc)
	}
	if diverse {
		top = ix.diversify(top, mult, qs, score, mask, limit, hasExact, sc)
	}
	hits := make([]Hit, len(top))
	for i, d := range top {
		h := Hit{Name: ix.docs[d].name, Plugin: ix.docs[d].plugin, Score: round4(float64(score[d]))}
		if hasExact && d == exact {
			h.Matched = append(h.Matched, "name:"+ix.docs[d].name)
		}
		for qi, t := range qs {
			if qi < maskTerms && mask[d]&(1<<uint(qi)) != 0 {
				if sc.label[qi] == "" {
					sc.label[qi] = t.label()
				}
				h.Matched = append(h.Matched, sc.label[qi])
			}
		}
		hits[i] = h
	}
	ix.put(sc)
	return Result{Hits: hits}, nil
}

// accumulate scores every tool for the query q into sc.score and
// sc.mask and returns the query's terms and the exact-name match, if any.
// The caller clears sc (put).
func (ix *Index) accumulate(q string, sc *scratch) (qs []queryTerm, exact int32, hasExact bool) {
	qs = ix.queryTerms(q, sc)
	// Accumulate: a branch-free loop over each term's postings. The mask
	// records which query terms a document matched (Hit.Matched).
	score, mask := sc.score, sc.mask
	for qi, t := range qs {
		w, bit := t.weight, uint32(1)<<uint(qi&31)
		if qi >= maskTerms {
			bit = 0
		}
		docs, ws := ix.pDoc[ix.start[t.id]:ix.start[t.id+1]], ix.pW[ix.start[t.id]:ix.start[t.id+1]]
		for j, d := range docs {
			score[d] += w * ws[j]
			mask[d] |= bit
		}
	}
	if ix.coordOn {
		ix.applyCoord(qs, score, mask)
	}
	if len(q) <= maxNameQuery && (ix.nonASCIINames || text.IsASCII(q)) {
		exact, hasExact = ix.exact[foldName(q)]
	}
	return qs, exact, hasExact
}

// put clears a query's state from sc and returns it to the pool. Only
// the query's terms' postings can have set a score or a mask bit, so when
// they are few against the catalog (rare words over many tools) the
// documents they reach are cleared one by one; otherwise the whole arrays.
func (ix *Index) put(sc *scratch) {
	postings := 0
	for _, t := range sc.terms {
		postings += int(ix.start[t.id+1] - ix.start[t.id])
	}
	if postings < len(sc.score)/8 {
		for _, t := range sc.terms {
			for _, d := range ix.pDoc[ix.start[t.id]:ix.start[t.id+1]] {
				sc.score[d], sc.mask[d] = 0, 0
			}
		}
	} else {
		clear(sc.score)
		clear(sc.mask)
	}
	clear(sc.label)
	clear(sc.terms) // drop the strings
	clear(sc.own)
	ix.scratch.Put(sc)
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func (ix *Index) selectNames(list string) Result {
	var r Result
	seen := map[int32]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		d, ok := ix.exact[foldName(name)]
		if !ok {
			r.Unknown = append(r.Unknown, name)
			continue
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		r.Hits = append(r.Hits, Hit{Name: ix.docs[d].name, Plugin: ix.docs[d].plugin, Matched: []string{"select"}})
	}
	return r
}

// queryTerms analyses a query: its own terms at weight 1, then the
// lexicon's expansions at a lower weight; each term once, unknown terms
// dropped. sc.slot is all zero on entry and on return; the terms are
// sc.terms, valid until sc is reused.
func (ix *Index) queryTerms(q string, sc *scratch) []queryTerm {
	slot := sc.slot
	out := sc.terms[:0]
	add := func(id int32, t string, w float32, source string) {
		if k := slot[id]; k > 0 {
			if out[k-1].weight < w {
				out[k-1].weight, out[k-1].source = w, source
			}
			return
		}
		if len(out) < maxQueryTerms {
			out = append(out, queryTerm{id: id, weight: w, term: t, source: source})
			slot[id] = int32(len(out))
		}
	}
	own := sc.own[:0]
	if text.IsASCII(q) {
		// The common English case: each word's terms and their ids were
		// worked out at build time.
		text.ASCIIWords(q, func(w string) {
			terms, ok := ix.words[w]
			if !ok {
				terms = ix.wordTerms(w)
			}
			for _, t := range terms {
				own = append(own, t.term)
				if t.id >= 0 {
					add(t.id, t.term, 1, "")
				}
			}
		})
	} else {
		q = text.Fold(q)
		ix.an.EachFolded(q, func(t string) {
			own = append(own, t)
			if id, ok := ix.terms[t]; ok {
				add(id, t, 1, "")
			}
		})
	}
	if ix.exp != nil {
		ix.exp.expand(q, own, add)
	}
	for _, t := range out {
		slot[t.id] = 0
	}
	sc.terms, sc.own = out, own
	return out
}

// wordTerms analyses one ASCII word and finds its terms' ids (-1: not in
// the index).
func (ix *Index) wordTerms(w string) []target {
	var out []target
	ix.an.Each(w, func(t string) {
		id, ok := ix.terms[t]
		if !ok {
			id = -1
		}
		out = append(out, target{id: id, term: t})
	})
	return out
}

// topK returns the best k documents with a score: score descending, then
// name. The exact-name match, if any, comes first whatever its score. The
// slice is new; sc lends the scores' buffer.
func (ix *Index) topK(score []float32, k int, exact int32, hasExact bool, sc *scratch) []int32 {
	k = min(k, len(score)) // a depth from the weights may be anything
	best := make([]int32, 0, max(k, 0)+1)
	if k <= 0 {
		return best
	}
	if hasExact {
		best = append(best, exact)
	}
	// A bounded selection: the others are kept sorted in rest, their scores
	// beside them in bs, so that finding a document's place compares floats
	// in one array and names only on a tie. lim is the least score that can
	// still enter (the last kept once the list is full), so the scan
	// decides almost every document with one predictable branch.
	rest, bs := best[len(best):len(best)], sc.topScore[:0]
	kk := k - len(best)
	if kk == 0 {
		return best
	}
	lim := float32(math.SmallestNonzeroFloat32)
	for d, s := range score {
		if !(s >= lim) || hasExact && int32(d) == exact { // NaN never enters
			continue
		}
		n := len(bs)
		name := ix.docs[d].name
		if n == kk && s == bs[n-1] && ix.docs[rest[n-1]].name <= name {
			continue // ties the last kept and does not sort before it
		}
		// The first place whose document d sorts before.
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if bs[m] > s || bs[m] == s && ix.docs[rest[m]].name <= name {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if n < kk {
			bs, rest = append(bs, 0), append(rest, 0)
			n++
		}
		copy(bs[lo+1:n], bs[lo:n-1])
		copy(rest[lo+1:n], rest[lo:n-1])
		bs[lo], rest[lo] = s, int32(d)
		if n == kk {
			lim = max(bs[n-1], math.SmallestNonzeroFloat32)
		}
	}
	sc.topScore = bs
	return best[:len(best)+len(rest)]
}

// applyCoord multiplies each matched tool's score by the share of the
// query's own terms (not expansions) it matched, to the power Coord.
func (ix *Index) applyCoord(qs []queryTerm, score []float32, mask []uint32) {
	var own uint32
	for qi, t := range qs {
		if qi < maskTerms && t.source == "" {
			own |= 1 << uint(qi)
		}
	}
	q := bits.OnesCount32(own)
	if q <= 1 {
		return
	}
	var tbl [maskTerms + 1]float32
	for m := 0; m <= q; m++ {
		tbl[m] = float32(math.Pow(float64(m)/float64(q), ix.coordP))
	}
	for d, s := range score {
		if s != 0 {
			score[d] = s * tbl[bits.OnesCount32(mask[d]&own)]
		}
	}
}
