package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing/fstest"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
)

// Context saved: the tokens of the tool definitions a request sends per
// round, counted by the host itself (host.Round.ToolTokens and
// AllToolsTokens: o200k_base tokens of each definition's JSON as sent).
//
// Each request runs through the real agent loop (host.Host.Run) against a
// scripted model on a local HTTP server that speaks the chat completions
// protocol: round 1 calls tool_search with the request and a limit of its
// number of labelled tools (3-5); round 2 answers. Both sides keep the
// same always-on tools: the default built-ins (current_time, todo_write),
// or none.

// contextRow is one catalog size.
type contextRow struct {
	BuiltIns  bool // current_time and todo_write always on (both sides)
	Tools     int
	Requests  int
	AllOn     float64 // mean tokens per round, every tool always on
	Round1    float64 // mean tokens, Toolshed round 1 (built-ins + tool_search)
	After     float64 // mean tokens per round after discovery
	Found     float64 // mean tools discovered
	SavedPct  float64 // 1 - After/AllOn, in percent
	Request2R float64 // the two-round request: 1 - (Round1+After)/(2*AllOn), in percent
}

const contextRequests = 20

func contextSaved(seal *dataset, sizes []int, builtIns bool) ([]contextRow, error) {
	// Requests with 3-5 labelled tools, spread evenly over the set.
	var pool []query
	for _, q := range seal.Queries {
		if n := len(q.Tools); n >= 3 && n <= 5 {
			pool = append(pool, q)
		}
	}
	if len(pool) < contextRequests {
		return nil, fmt.Errorf("seal-tools: only %d queries with 3-5 tools", len(pool))
	}
	var reqs []query
	for i := 0; i < contextRequests; i++ {
		reqs = append(reqs, pool[i*len(pool)/contextRequests])
	}
	byName := map[string]manifest.Tool{}
	for _, t := range seal.Tools {
		byName[t.Name] = t
	}
	limits := map[string]int{}
	for _, q := range reqs {
		limits[q.Query] = len(q.Tools)
	}
	srv := httptest.NewServer(scriptedModel(limits))
	defer srv.Close()
	cfg := openai.DefaultConfig("none")
	cfg.BaseURL = srv.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)

	var rows []contextRow
	for _, n := range sizes {
		row := contextRow{Tools: n, BuiltIns: builtIns}
		var whole *catalog.Snapshot
		for _, q := range reqs {
			// The catalog: the request's own tools, then the set's tools in
			// file order up to n (all of them at the set's size).
			tools := make([]manifest.Tool, 0, n)
			in := map[string]bool{}
			for _, name := range q.Tools {
				if t, ok := byName[name]; ok && !in[name] {
					tools, in[name] = append(tools, t), true
				}
			}
			for _, t := range seal.Tools {
				if len(tools) >= n {
					break
				}
				if !in[t.Name] {
					tools, in[t.Name] = append(tools, t), true
				}
			}
			snap := whole
			if snap == nil || n < len(seal.Tools) {
				var err error
				if snap, err = snapshotOf(tools); err != nil {
					return nil, err
				}
				if n >= len(seal.Tools) {
					whole = snap
				}
			}
			if got := len(snap.Tools); got != len(tools) {
				return nil, fmt.Errorf("catalog of %d tools: %d loaded (%v)", len(tools), got, snap.Errors)
			}
			var always []host.GoTool
			if builtIns {
				always = []host.GoTool{builtin.CurrentTime(nil), builtin.Todo()}
			}
			h, err := host.New(host.Options{
				Client: client, Model: "scripted", Retries: -1,
				Catalog: func() *catalog.Snapshot { return snap },
				Tools:   always,
				Search:  host.SearchOptions{Mode: host.ModeKeyword},
			})
			if err != nil {
				return nil, err
			}
			resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: q.Query}})
			h.Close(context.Background())
			if err != nil {
				return nil, err
			}
			if len(resp.Rounds) != 2 {
				return nil, fmt.Errorf("request %q: %d rounds, want 2", q.Query, len(resp.Rounds))
			}
			r1, r2 := resp.Rounds[0], resp.Rounds[1]
			if r1.ToolTokens == 0 || r2.ToolTokens == 0 || r1.AllToolsTokens == 0 {
				return nil, fmt.Errorf("request %q: the host counted no tokens", q.Query)
			}
			row.Requests++
			row.AllOn += float64(r1.AllToolsTokens)
			row.Round1 += float64(r1.ToolTokens)
			row.After += float64(r2.ToolTokens)
			row.Found += float64(len(resp.Discovered))
		}
		k := float64(row.Requests)
		row.AllOn /= k
		row.Round1 /= k
		row.After /= k
		row.Found /= k
		row.SavedPct = 100 * (1 - row.After/row.AllOn)
		row.Request2R = 100 * (1 - (row.Round1+row.After)/(2*row.AllOn))
		rows = append(rows, row)
	}
	return rows, nil
}

// repairSchema makes the few Seal-Tools schemas that are not valid JSON
// Schema valid, so every tool of the set can be loaded as a manifest: an
// "examples" keyword given as a string becomes an array of that string.
func repairSchema(raw json.RawMessage) json.RawMessage {
	if _, err := manifest.CompileSchema(raw); err == nil {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && k == "examples" {
					x[k] = []any{s}
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// toolName makes a Seal-Tools name a manifest tool name (a few have
// spaces): other characters become "_", and a clash gets a number.
func toolName(name string, used map[string]bool) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	out := string(b[:min(len(b), 60)])
	for i := 2; used[strings.ToLower(out)]; i++ {
		out = fmt.Sprintf("%s_%d", string(b[:min(len(b), 58)]), i)
	}
	used[strings.ToLower(out)] = true
	return out
}

// snapshotOf loads tools as a catalog of plugins of at most
// manifest.MaxTools tools each
// (manifests only: no module is read to index or to count tokens). Names
// and schemas the manifest format refuses are repaired (toolName,
// repairSchema).
func snapshotOf(tools []manifest.Tool) (*catalog.Snapshot, error) {
	fsys := fstest.MapFS{}
	used := map[string]bool{}
	const per = manifest.MaxTools
	for i := 0; i*per < len(tools); i++ {
		m := manifest.Manifest{
			Name: fmt.Sprintf("p%03d", i), Version: "1.0.0", ABIVersion: 1,
			Wasm: fmt.Sprintf("p%03d.wasm", i), SHA256: strings.Repeat("0", 64),
			Tools: slices.Clone(tools[i*per : min(len(tools), (i+1)*per)]),
		}
		for j := range m.Tools {
			m.Tools[j].Name = toolName(m.Tools[j].Name, used)
			m.Tools[j].Parameters = repairSchema(m.Tools[j].Parameters)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		fsys[m.Name+".json"] = &fstest.MapFile{Data: b}
	}
	return catalog.LoadFS(fsys, "catalog", nil)
}

// scriptedModel answers chat completions: a request without tool results
// gets a tool_search call for its user message, limited to the request's
// number of labelled tools; a request with tool results gets an answer.
func scriptedModel(limits map[string]int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req openai.ChatCompletionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
		finish := openai.FinishReasonStop
		var user string
		answered := false
		for _, m := range req.Messages {
			switch m.Role {
			case openai.ChatMessageRoleUser:
				user = m.Content
			case openai.ChatMessageRoleTool:
				answered = true
			}
		}
		if answered {
			msg.Content = "done"
		} else {
			args, _ := json.Marshal(map[string]any{"query": user, "limit": limits[user]})
			msg.ToolCalls = []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: host.ToolSearchName, Arguments: string(args)}}}
			finish = openai.FinishReasonToolCalls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "r", Object: "chat.completion", Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}})
	})
}
