package host

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/embed"
	"github.com/toolshed/toolshed/search"
)

// Embedder turns texts into vectors for tool_search's semantic stage: one
// vector per text, in order, all of one dimension. An OpenAI-compatible
// embeddings endpoint is one (cmd/toolshed's search.embeddings). It must
// be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Defaults of the semantic stage.
const (
	// DefaultEmbedTimeout bounds the embedding of one query.
	DefaultEmbedTimeout = 5 * time.Second
	// embedCatalogTimeout bounds the embedding of a whole catalog (a
	// catalog of 100,000 tools is 800 calls of 128 texts). Batches done
	// before it are cached, so the next try goes on from there.
	embedCatalogTimeout = 30 * time.Minute
	// embedRetry is how long after a failed catalog embedding the next
	// search may try again.
	embedRetry = time.Minute
)

// semantic is the candidate list's semantic stage: the catalog's tools
// embedded once per snapshot, in the background, and each query embedded
// when a candidate list is built. Until a snapshot's vectors are ready,
// the newest ready ones serve (a tool they lack is just not ranked; a
// tool they hold that is gone is skipped by search.Index.Candidates).
// Nothing here fails a search: without vectors the list is the keyword
// list.
//
// Concurrency: safe for concurrent use; one catalog embedding runs at a
// time.
type semantic struct {
	e       Embedder
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	ready    *semVectors       // the newest vectors made
	building *catalog.Snapshot // the snapshot being embedded, if any
	failed   time.Time         // when the last catalog embedding failed
	warned   time.Time         // when a failed query embedding was last logged
}

type semVectors struct {
	snap  *catalog.Snapshot
	v     *embed.Vectors
	texts []string // the text embedded for each of v's vectors, in order
}

func newSemantic(e Embedder, timeout time.Duration, log *slog.Logger) *semantic {
	if timeout <= 0 {
		timeout = DefaultEmbedTimeout
	}
	return &semantic{e: e, timeout: timeout, log: log}
}

// rank returns the tools nearest to q (at most search.CandidateDepth), and
// what the record says of the stage: "used", "not ready" (the catalog's
// vectors are being made) or "failed: …".
func (m *semantic) rank(ctx context.Context, snap *catalog.Snapshot, q string) ([]string, string) {
	vs := m.vectors(snap)
	if vs == nil {
		return nil, "not ready"
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	qv, err := m.e.Embed(ctx, []string{q})
	if err == nil && len(qv) != 1 {
		err = fmt.Errorf("the embedder answered %d vectors for one text", len(qv))
	}
	if err == nil && vs.v.Len() > 0 && len(qv[0]) != vs.v.Dim() {
		err = fmt.Errorf("the query's vector has %d dimensions, the catalog's %d (did the model change?)", len(qv[0]), vs.v.Dim())
		m.drop(vs) // embedded again, a minute from now
	}
	if err != nil {
		m.mu.Lock()
		warn := time.Since(m.warned) >= embedRetry
		if warn {
			m.warned = time.Now()
		}
		m.mu.Unlock()
		if warn { // once a minute at most: every search says it in its record
			m.log.Warn("tool_search: semantic stage: a query could not be embedded; candidate lists are keyword lists meanwhile", "error", err)
		}
		return nil, "failed: " + err.Error()
	}
	return vs.v.Rank(qv[0], search.CandidateDepth), "used"
}

// vectors returns the newest vectors made, and starts embedding snap when
// it is newer than theirs (a later generation) and no embedding runs (nor
// failed within embedRetry). A session still on an older snapshot uses
// the newer vectors; it does not start an embedding of its own.
func (m *semantic) vectors(snap *catalog.Snapshot) *semVectors {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.ready
	newer := cur == nil || (snap != cur.snap && snap.Generation > cur.snap.Generation)
	if newer && m.building == nil && time.Since(m.failed) >= embedRetry {
		m.building = snap
		go m.build(snap)
	}
	return cur
}

// drop forgets vs, when they are still the newest, so that the catalog
// is embedded again once embedRetry has passed, and empties the
// embedder's cache when it has one (a Forget method), so that the new
// embedding asks the endpoint again.
func (m *semantic) drop(vs *semVectors) {
	if f, ok := m.e.(interface{ Forget() }); ok {
		f.Forget()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready == vs {
		m.ready, m.failed = nil, time.Now()
	}
}

// build embeds snap's tools and publishes their vectors. A tool whose
// text the newest vectors already hold keeps its vector, so a reload asks
// the endpoint only for new and changed tools, whatever the embedder's
// cache has kept.
func (m *semantic) build(snap *catalog.Snapshot) {
	names := make([]string, len(snap.Tools))
	texts := make([]string, len(snap.Tools))
	for i, t := range snap.Tools {
		names[i], texts[i] = t.Name(), embed.ToolText(t.Name(), t.Spec.Description)
	}
	m.mu.Lock()
	prev := m.ready
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), embedCatalogTimeout)
	defer cancel()
	start := time.Now()
	vecs, err := embedReusing(ctx, m.e, texts, prev)
	var v *embed.Vectors
	if err == nil {
		v, err = embed.NewVectors(names, vecs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.building = nil
	if err != nil {
		m.failed = time.Now()
		m.log.Warn("tool_search: semantic stage: the catalog could not be embedded; candidate lists are keyword lists until it can", "tools", len(texts), "error", err, "retry_after", embedRetry)
		return
	}
	if m.ready == nil || m.ready.snap.Generation <= snap.Generation {
		m.ready = &semVectors{snap: snap, v: v, texts: texts}
	}
	m.log.Info("tool_search: semantic stage ready", "tools", len(texts), "generation", snap.Generation, "took", time.Since(start).Round(time.Millisecond))
}

// embedReusing embeds texts, taking the vector of a text prev holds from
// prev. When the endpoint's vectors are not of prev's dimension (the
// model changed), every text is embedded again.
func embedReusing(ctx context.Context, e Embedder, texts []string, prev *semVectors) ([][]float32, error) {
	vecs := make([][]float32, len(texts))
	var todo []string
	var at []int
	if prev != nil {
		old := make(map[string]int, len(prev.texts))
		for i, t := range prev.texts {
			old[t] = i
		}
		for i, t := range texts {
			if j, ok := old[t]; ok {
				vecs[i] = prev.v.At(j)
			}
		}
	}
	for i, v := range vecs {
		if v == nil {
			todo, at = append(todo, texts[i]), append(at, i)
		}
	}
	if len(todo) == 0 {
		return vecs, nil
	}
	got, err := e.Embed(ctx, todo)
	if err != nil {
		return nil, err
	}
	if len(got) != len(todo) {
		return nil, fmt.Errorf("the embedder answered %d vectors for %d texts", len(got), len(todo))
	}
	if len(todo) < len(texts) && prev.v.Dim() != len(got[0]) {
		return e.Embed(ctx, texts)
	}
	for j, i := range at {
		vecs[i] = got[j]
	}
	return vecs, nil
}
