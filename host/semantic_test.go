package host_test

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/embed"
)

// conceptVec is a scripted embedding model: words of one concept share a
// dimension (so "drizzle" is near "umbrella" and "rain" though no word is
// shared); any other word goes, lightly, to a dimension of its hash.
func conceptVec(s string) []float32 {
	concepts := [][]string{{"rain", "drizzle", "umbrella", "brolly", "wet"}, {"song", "tune", "melody", "music"}}
	v := make([]float32, 64)
	v[63] = 0.01
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		hit := false
		for i, c := range concepts {
			for _, x := range c {
				if w == x {
					v[i] += 1
					hit = true
				}
			}
		}
		if !hit {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[2+h.Sum32()%60] += 0.1
		}
	}
	return v
}

// embedServer is an OpenAI-compatible embeddings endpoint on 127.0.0.1
// speaking conceptVec; while failing is set it answers 503.
func embedServer(t *testing.T, failing *atomic.Bool) *embed.Client {
	return embedServerDims(t, failing, nil)
}

// embedServerDims is embedServer whose vectors are cut to *dims
// dimensions when dims is set and not zero (a model changed behind the
// endpoint).
func embedServerDims(t *testing.T, failing *atomic.Bool, dims *atomic.Int32) *embed.Client {
	return embedServerCounting(t, failing, dims, nil)
}

// embedServerCounting is embedServerDims that adds the number of texts of
// every request to inputs, when set.
func embedServerCounting(t *testing.T, failing *atomic.Bool, dims *atomic.Int32, inputs *atomic.Int64) *embed.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if failing.Load() || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"embeddings unavailable","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		if inputs != nil {
			inputs.Add(int64(len(req.Input)))
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, s := range req.Input {
			data[i] = item{"embedding", i, conceptVec(s)}
			if dims != nil && dims.Load() > 0 {
				data[i].Embedding = data[i].Embedding[:dims.Load()]
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(srv.Close)
	return &embed.Client{BaseURL: srv.URL + "/v1", Model: "concepts", Batch: 256}
}

// searchUntil begins the search in fresh sessions until the record's
// semantic stage says want (the catalog is embedded in the background).
func searchUntil(t *testing.T, h *host.Host, query, want string) (*host.PendingSearch, *host.SearchRecord) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p, _, rec := h.NewSession().BeginSearch(`{"query": "`+query+`"}`, true)
		if p == nil {
			t.Fatalf("%q: no model asked: %+v", query, rec)
		}
		if strings.HasPrefix(rec.Semantic, want) {
			return p, rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: the semantic stage still says %q after a minute, want %q", query, rec.Semantic, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listPosition is the line of the candidate list (0 first) that names
// tool, or -1.
func listPosition(p *host.PendingSearch, tool string) int {
	_, list, _ := strings.Cut(p.Prompt, "\nTools:\n")
	for i, line := range strings.Split(strings.TrimSpace(list), "\n") {
		names, _, _ := strings.Cut(line, ": ")
		for _, n := range strings.Split(names, ", ") {
			if n == tool {
				return i
			}
		}
	}
	return -1
}

// TestSemanticStage: with an embeddings endpoint, a query that shares no
// word with the tool it needs (keyword search finds nothing, so HYBRID
// asks the model) gets that tool at the head of the candidate list, once
// the catalog is embedded; before that, and whenever the endpoint fails,
// the list is the keyword list and the search goes on. A hot reload is
// embedded again, and its new tool reaches the list.
func TestSemanticStage(t *testing.T) {
	umbrella := manifest.Tool{Name: "umbrellaAdvisor", Description: "Says whether to carry an umbrella when rain is likely.",
		Parameters: json.RawMessage(`{"type":"object"}`)}
	tune := manifest.Tool{Name: "melodyMaker", Description: "Writes a tune for a short poem.", Parameters: json.RawMessage(`{"type":"object"}`)}
	tools := syntheticTools(3000)
	tools = append(tools[:1530:1530], append([]manifest.Tool{umbrella}, tools[1530:]...)...) // deep in a plugin: far down a list without vectors
	var cur atomic.Pointer[catalog.Snapshot]
	cur.Store(manifestCatalogGen(t, tools, 1))
	var failing atomic.Bool
	var dims atomic.Int32
	h, err := host.New(host.Options{Client: nil, Upstream: &host.Upstream{BaseURL: "http://127.0.0.1:1/v1"}, Model: "m",
		Catalog: cur.Load, Search: host.SearchOptions{Embedder: embedServerDims(t, &failing, &dims)}})
	if err != nil {
		t.Fatal(err)
	}

	// The first list is made before any vector: the keyword list.
	p, _, rec := h.NewSession().BeginSearch(`{"query": "is drizzle coming"}`, true)
	if p == nil || rec.Semantic != "not ready" || rec.Candidates == 0 {
		t.Fatalf("first search: record %+v", rec)
	}
	if i := listPosition(p, "umbrellaAdvisor"); i >= 0 && i < 100 {
		t.Fatalf("umbrellaAdvisor on line %d of a list made without vectors", i)
	}

	p, rec = searchUntil(t, h, "is drizzle coming", "used")
	if i := listPosition(p, "umbrellaAdvisor"); i != 0 {
		t.Fatalf("umbrellaAdvisor on line %d, want the first (record %+v)", i, rec)
	}

	// The endpoint fails: the search goes on with the keyword list, and
	// says why.
	failing.Store(true)
	p, _, rec = h.NewSession().BeginSearch(`{"query": "will it be wet today"}`, true)
	if p == nil || !strings.HasPrefix(rec.Semantic, "failed: ") || !strings.Contains(rec.Semantic, "embeddings unavailable") || rec.Candidates == 0 {
		t.Fatalf("with a failing endpoint: record %+v", rec)
	}
	failing.Store(false)

	// A reload adds a tool: the next search embeds the new catalog, and
	// the tool comes to the head of its list.
	cur.Store(manifestCatalogGen(t, append(tools, tune), 2))
	deadline := time.Now().Add(time.Minute)
	for {
		p, rec = searchUntil(t, h, "compose a little song", "used")
		if listPosition(p, "melodyMaker") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("melodyMaker on line %d a minute after the reload (record %+v)", listPosition(p, "melodyMaker"), rec)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The model behind the endpoint changes: its vectors no longer match
	// the catalog's, which the record says; the catalog's are dropped (to
	// be made again) and the next list is the keyword list.
	dims.Store(32)
	p, _, rec = h.NewSession().BeginSearch(`{"query": "will it be wet tonight"}`, true)
	if p == nil || !strings.Contains(rec.Semantic, "the query's vector has 32 dimensions, the catalog's 64") {
		t.Fatalf("after the model changed: record %+v", rec)
	}
	if _, _, rec = h.NewSession().BeginSearch(`{"query": "will it be wet this evening"}`, true); rec.Semantic != "not ready" {
		t.Fatalf("after the dimensions changed, the next record %+v, want not ready", rec)
	}
	dims.Store(0)
}

// TestSemanticReloadReusesVectors: a reload that adds one tool asks the
// endpoint for that tool's text and the queries', not for the catalog
// again, even with an embedder that caches nothing (or whose cache
// queries have pushed the tools out of).
func TestSemanticReloadReusesVectors(t *testing.T) {
	var failing atomic.Bool
	var inputs atomic.Int64
	e := embedServerCounting(t, &failing, nil, &inputs)
	e.CacheEntries = -1
	tools := syntheticTools(1200)
	var cur atomic.Pointer[catalog.Snapshot]
	cur.Store(manifestCatalogGen(t, tools, 1))
	h, err := host.New(host.Options{Upstream: &host.Upstream{BaseURL: "http://127.0.0.1:1/v1"}, Model: "m",
		Catalog: cur.Load, Search: host.SearchOptions{Embedder: e}})
	if err != nil {
		t.Fatal(err)
	}
	searchUntil(t, h, "is drizzle coming", "used")
	if n := inputs.Load(); n < 1200 {
		t.Fatalf("%d texts embedded for a catalog of 1,200 tools", n)
	}
	before := inputs.Load()
	tune := manifest.Tool{Name: "melodyMaker", Description: "Writes a tune for a short poem.", Parameters: json.RawMessage(`{"type":"object"}`)}
	cur.Store(manifestCatalogGen(t, append(tools, tune), 2))
	searches := int64(0)
	deadline := time.Now().Add(time.Minute)
	for {
		p, _, rec := h.NewSession().BeginSearch(`{"query": "compose a little song"}`, true)
		searches++
		if p == nil {
			t.Fatalf("no model asked: %+v", rec)
		}
		if rec.Semantic == "used" && listPosition(p, "melodyMaker") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("melodyMaker on line %d a minute after the reload (record %+v)", listPosition(p, "melodyMaker"), rec)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One text per search (its query) and the new tool's.
	if got := inputs.Load() - before; got > searches+1 {
		t.Fatalf("the reload embedded %d texts for %d searches and one new tool", got, searches)
	}
}

// TestSemanticStageFailingCatalog: an endpoint that cannot embed the
// catalog leaves every list the keyword list ("not ready"), searches
// from many sessions at once go on, and the failure is logged.
func TestSemanticStageFailingCatalog(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	snap := manifestCatalogGen(t, syntheticTools(1500), 1)
	var logs strings.Builder
	var mu sync.Mutex
	h, err := host.New(host.Options{Upstream: &host.Upstream{BaseURL: "http://127.0.0.1:1/v1"}, Model: "m",
		Catalog: func() *catalog.Snapshot { return snap }, Search: host.SearchOptions{Embedder: embedServer(t, &failing)},
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				p, _, rec := h.NewSession().BeginSearch(`{"query": "is drizzle coming"}`, true)
				if p == nil || rec.Semantic != "not ready" || rec.Candidates == 0 {
					t.Errorf("record %+v", rec)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		out := logs.String()
		mu.Unlock()
		if strings.Contains(out, "the catalog could not be embedded") && strings.Contains(out, "embeddings unavailable") {
			if n := strings.Count(out, "could not be embedded"); n != 1 {
				t.Fatalf("the failure logged %d times, want once (no retry within a minute):\n%s", n, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed catalog embedding:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
