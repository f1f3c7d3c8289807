package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
)

// hostOver is a host with the given catalog and a scripted model served
// on 127.0.0.1 (faultHost); its deferred tools need no module (none is
// called).
func hostOver(t *testing.T, model *scripted, snap *catalog.Snapshot, opts host.Options) *host.Host {
	t.Helper()
	opts.Catalog = func() *catalog.Snapshot { return snap }
	return faultHost(t, model.ServeHTTP, opts)
}

// manifestCatalog writes tools as manifests of 60 tools each (plugins p00,
// p01, …) and loads them.
func manifestCatalog(t *testing.T, tools []manifest.Tool) *catalog.Snapshot {
	t.Helper()
	return manifestCatalogGen(t, tools, 0)
}

// manifestCatalogGen is manifestCatalog with the snapshot's generation (a
// hot reload counts it up).
func manifestCatalogGen(t *testing.T, tools []manifest.Tool, gen uint64) *catalog.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i*60 < len(tools); i++ {
		part := tools[i*60 : min(len(tools), (i+1)*60)]
		m := map[string]any{"name": fmt.Sprintf("p%02d", i), "version": "1.0.0", "abi_version": 1,
			"wasm": fmt.Sprintf("p%02d.wasm", i), "sha256": strings.Repeat("0", 64), "tools": part}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%02d.json", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(dir, &catalog.Options{Generation: gen})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 || len(snap.Tools) != len(tools) {
		t.Fatalf("%d tools loaded of %d: %v", len(snap.Tools), len(tools), snap.Errors)
	}
	return snap
}

// syntheticTools is a catalog of n tools in words of their own: none
// matches the word "frobnicate".
func syntheticTools(n int) []manifest.Tool {
	topics := []string{"invoice", "shipment", "payroll", "weather", "ticket", "sensor", "contract", "recipe", "flight", "patient"}
	verbs := []string{"get", "create", "update", "delete", "list", "search", "export", "validate"}
	out := make([]manifest.Tool, n)
	for i := range out {
		topic, verb := topics[i%len(topics)], verbs[(i/len(topics))%len(verbs)]
		out[i] = manifest.Tool{
			Name:        fmt.Sprintf("%s%s%d", verb, strings.ToUpper(topic[:1])+topic[1:], i),
			Description: fmt.Sprintf("%s the %s record number %d of the back office.", strings.ToUpper(verb[:1])+verb[1:], topic, i),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"record id"}}}`),
		}
	}
	return out
}

// TestHybridAsksModelOverLargeCatalog: on a 4,076-tool catalog a query
// keyword search cannot match goes to the selection model with a list
// drawn from the whole pool within the token budget, and the tool the
// model picks is discovered and sent in the next round.
func TestHybridAsksModelOverLargeCatalog(t *testing.T) {
	run := func(t *testing.T, tools []manifest.Tool) {
		snap := manifestCatalog(t, tools)
		// The model picks the last tool of the list it is sent (keyword
		// search finds nothing for this query).
		var pick, prompt string
		model := &scripted{}
		model.Before = func(_ int, w http.ResponseWriter, r *http.Request) bool {
			var req openai.ChatCompletionRequest
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if json.Unmarshal(body, &req) != nil || len(req.Tools) > 0 {
				return false
			}
			prompt = req.Messages[len(req.Messages)-1].Content
			lines := strings.Split(strings.TrimSpace(prompt), "\n")
			names, _, _ := strings.Cut(lines[len(lines)-1], ":")
			group := strings.Split(names, ", ") // tools that share a description share a line
			pick = group[len(group)-1]
			json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "sel", Object: "chat.completion", Model: "scripted",
				Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant",
					Content: fmt.Sprintf(`{"tools": [%q]}`, pick)}, FinishReason: "stop"}}})
			return true
		}
		h := hostOver(t, model, snap, host.Options{})
		resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{
			{Role: "user", Content: "use theToolFound with {} to frobnicate"}})
		if err != nil {
			t.Fatal(err)
		}
		if pick == "" {
			t.Fatalf("the selection model was never asked; %d requests", model.Calls())
		}
		_, list, _ := strings.Cut(prompt, "\nTools:\n")
		listed := 0 // tools in the list
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			names, _, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("candidate line %q has no \": \"", line)
			}
			listed += len(strings.Split(names, ", "))
		}
		if !strings.Contains(list, pick+": ") || listed < 100 || listed >= len(tools) {
			t.Fatalf("candidate list of %d tools (of %d); holds %s: %v", listed, len(tools), pick, strings.Contains(prompt, pick))
		}
		var rec *host.SearchRecord
		for _, round := range resp.Rounds {
			for _, c := range round.ToolCalls {
				if c.Search != nil {
					rec = c.Search
				}
			}
		}
		if rec == nil || rec.Path != "llm" || !slices.Equal(rec.Found, []string{pick}) ||
			rec.Candidates != listed || rec.CandidateTokens > 6000 || rec.CandidateTokens < 1000 {
			t.Fatalf("search record %+v (list of %d tools)", rec, listed)
		}
		sent := model.ToolsSent()
		if after := sent[len(sent)-1]; !slices.Contains(after, pick) {
			t.Fatalf("last round's tools %v lack %s", after, pick)
		}
	}
	t.Run("synthetic", func(t *testing.T) { run(t, syntheticTools(4076)) })
	t.Run("seal-tools", func(t *testing.T) {
		tools, err := evalrun.ReadTools(filepath.Join("..", "..", "shared", "eval", "seal-tools", "tools.jsonl"))
		if os.IsNotExist(err) || err != nil && strings.Contains(err.Error(), "no such file") {
			t.Skip("Seal-Tools not found beside the repository")
		}
		if err != nil {
			t.Fatal(err)
		}
		// Keep the tools a manifest accepts; parameters do not matter here.
		valid := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
		var ok []manifest.Tool
		for _, tl := range tools {
			if valid.MatchString(tl.Name) {
				tl.Parameters = json.RawMessage(`{"type":"object"}`)
				ok = append(ok, tl)
			}
		}
		run(t, ok)
	})
}

// bundledHost is a host over the bundled manifests (plugin-manifests/).
func bundledHost(t *testing.T, opts host.Options) *host.Host {
	t.Helper()
	snap, err := catalog.Load("../plugin-manifests", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Fatal(snap.Errors)
	}
	return hostOver(t, &scripted{}, snap, opts)
}

// TestSearchDiscoversOnlyWhatFits: the relevance cut keeps weak matches
// (a shared character, a stray word) out of the discovered set; an
// explicit limit still returns more.
func TestSearchDiscoversOnlyWhatFits(t *testing.T) {
	snap, err := catalog.Load("../plugin-manifests", nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	h := hostOver(t, &scripted{}, snap, host.Options{Search: host.SearchOptions{Mode: host.ModeKeyword}})
	ctx := context.Background()
	for _, c := range []struct{ query, want string }{
		{"查表结构", "describeTables"},
		{"生成图表", "createBarChart"},
		{"run a SQL query on the customers table", "executeSql"},
	} {
		s := h.NewSession()
		res, rec := s.Call(ctx, host.ToolSearchName, fmt.Sprintf(`{"query": %q}`, c.query))
		if res.IsError || len(rec.Found) == 0 || rec.Found[0] != c.want {
			t.Errorf("%s: found %v, want %s first (%s)", c.query, rec.Found, c.want, res.Content)
		}
		for _, n := range s.Discovered() {
			tool, _ := snap.Tool(n)
			if p := tool.Plugin.Name(); p == "weather" || p == "textkit" {
				t.Errorf("%s discovered %s of plugin %s: %v", c.query, n, p, s.Discovered())
			}
		}
		s.Close()
	}
	s := h.NewSession()
	defer s.Close()
	_, rec := s.Call(ctx, host.ToolSearchName, `{"query": "查表结构", "limit": 5}`)
	if len(rec.Found) != 5 {
		t.Errorf("limit 5 found %v", rec.Found)
	}
}

// TestSearchArgumentErrors: each wrong argument gets a message saying
// what is wrong, short, without echoing the query.
func TestSearchArgumentErrors(t *testing.T) {
	h := bundledHost(t, host.Options{})
	huge := strings.Repeat("find a weather tool ", 180_000) // 3.6 MB
	for _, c := range []struct{ args, want string }{
		{`{"query": "weather", "limit": "five"}`, "limit must be an integer from 1 to 20"},
		{`{"query": "weather", "limit": 0}`, "limit must be an integer from 1 to 20"},
		{`{"query": "weather", "limit": 21}`, "limit must be an integer from 1 to 20"},
		{`{"query": "weather", "limit": 2.5}`, "limit must be an integer from 1 to 20"},
		{`{"query": 7}`, `tool_search needs "query", a string`},
		{`{"limit": 3}`, `tool_search needs "query", a string`},
		{`{"query": "  "}`, "query is empty"},
		{`not json`, "must be a JSON object"},
		{fmt.Sprintf(`{"query": %q}`, huge), fmt.Sprintf("query is %d bytes; the limit is 4096 bytes", len(huge))},
	} {
		s := h.NewSession()
		res, rec := s.Call(context.Background(), host.ToolSearchName, c.args)
		if !res.IsError || !strings.Contains(res.Content, c.want) || len(res.Content) > 200 || rec.Path != "invalid" || len(s.Discovered()) > 0 {
			t.Errorf("%.60s: %+v (path %s), want an error with %q", c.args, res, rec.Path, c.want)
		}
		s.Close()
	}
	s := h.NewSession()
	defer s.Close()
	if res, _ := s.Call(context.Background(), host.ToolSearchName, `{"query": "weather", "limit": 20}`); res.IsError {
		t.Errorf("limit 20 refused: %s", res.Content)
	}
}
