package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/config"
)

// TestEmbeddingsConfig: search.embeddings reaches tool_search's semantic
// stage: the catalog and the query go to its endpoint with its model and
// dimensions, and with model.api_key when the two base URLs are the same.
func TestEmbeddingsConfig(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input      []string `json:"input"`
			Model      string   `json:"model"`
			Dimensions int      `json:"dimensions"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen[fmt.Sprintf("%s %s dims=%d auth=%s", r.URL.Path, req.Model, req.Dimensions, r.Header.Get("Authorization"))] = true
		mu.Unlock()
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, s := range req.Input {
			data[i] = item{i, []float32{float32(len(s)%7) + 1, 1, float32(strings.Count(s, "e"))}}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	defer srv.Close()

	dir := t.TempDir()
	for p := 0; p < 20; p++ { // 1,200 tools: more than a list holds, so the stage is asked
		tools := make([]map[string]any, 60)
		for i := range tools {
			tools[i] = map[string]any{"name": fmt.Sprintf("tool%02d_%02d", p, i), "description": fmt.Sprintf("Does task %d of office %d.", i, p),
				"parameters": map[string]any{"type": "object"}}
		}
		b, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("p%02d", p), "version": "1.0.0", "abi_version": 1, "wasm": fmt.Sprintf("p%02d.wasm", p),
			"sha256": strings.Repeat("0", 64), "tools": tools})
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%02d.json", p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(dir, nil)
	if err != nil || len(snap.Tools) != 1200 {
		t.Fatalf("catalog: %v %v", err, snap.Errors)
	}
	l, err := config.Load(config.Source{Env: []string{"TOOLSHED_MODEL_BASE_URL=" + srv.URL + "/v1/", "TOOLSHED_MODEL_API_KEY=sk-model",
		"TOOLSHED_SEARCH_EMBEDDINGS_BASE_URL=" + srv.URL + "/v1", "TOOLSHED_SEARCH_EMBEDDINGS_MODEL=emb-model",
		"TOOLSHED_SEARCH_EMBEDDINGS_DIMENSIONS=3", "TOOLSHED_LOG_LEVEL=error"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAgent(&l.Config, func() *catalog.Snapshot { return snap }, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	deadline := time.Now().Add(time.Minute)
	for {
		p, _, rec := a.host.NewSession().BeginSearch(`{"query": "zzz qqq"}`, true)
		if p == nil {
			t.Fatalf("no candidate list: %+v", rec)
		}
		if rec.Semantic == "used" {
			break
		}
		if rec.Semantic != "not ready" || time.Now().After(deadline) {
			t.Fatalf("semantic stage: %q", rec.Semantic)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "/v1/embeddings emb-model dims=3 auth=Bearer sk-model"; len(seen) != 1 || !seen[want] {
		t.Fatalf("the endpoint saw %v, want only %q", seen, want)
	}
}
