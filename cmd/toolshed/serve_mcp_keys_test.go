package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// bearer sends every request with an API key.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPKeyShares: through toolshed serve with two API keys, MCP
// sessions over streamable HTTP run for the key that opened them. Key A's
// second session cannot take more plugin memory than A's share
// (server.per_key.instance_memory_mb 300: one 200 MiB instance, not two),
// with a tool error naming the share, while key B's session still gets its
// 200 MiB; and A cannot hold more than its share of the session slots
// (server.mcp.max_sessions 4, so 2 per key by default): its third
// initialize is refused with HTTP 429 naming server.per_key.mcp_sessions,
// while B still opens its second, and the refusal is counted.
func TestServeMCPKeyShares(t *testing.T) {
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	e := newHostileEnv(t, "")
	e.plugin("hog.json", "hog", wat(t, wasmbuild.GrowWAT(200)), map[string]int{"max_memory_mb": 512}, nil, "hog")
	s := startServe(t, &scripted.Model{}, map[string]string{"server.api_keys": keyA + "," + keyB, "plugins.dir": e.plugins,
		"search.mode": "keyword", "server.instance_memory_mb": "1024", "server.per_key.instance_memory_mb": "300",
		"limits.max_memory_mb": "512", "server.reclaim_idle": "1h", "server.mcp.max_sessions": "4", "server.mcp.evict_after": "0"})
	post := func(key, body string) *http.Request {
		req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return req
	}
	open := func(key string) *mcp.ClientSession {
		t.Helper()
		cs, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(key)}}, "")
		if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "hog"}); isErr || !strings.Contains(text, "hog") {
			t.Fatalf("tool_search: %q", text)
		}
		return cs
	}

	if text, isErr := callText(t, open(keyA), "hog", map[string]any{}); isErr || text != "ok" {
		t.Fatalf("key A's first 200 MiB: %q (error %v)", text, isErr)
	}
	if text, isErr := callText(t, open(keyA), "hog", map[string]any{}); !isErr || !strings.Contains(text, "this API key is at its share of the server's plugin memory budget") {
		t.Fatalf("key A's second 200 MiB, in another MCP session: %q (error %v), want the key's share refused", text, isErr)
	}
	if text, isErr := callText(t, open(keyB), "hog", map[string]any{}); isErr || text != "ok" {
		t.Fatalf("key B's 200 MiB while A is at its share: %q (error %v)", text, isErr)
	}
	st := s.server.runtime.MemoryStats()
	if a, b := st.ByTenant[s.server.tenant(post(keyA, ""))], st.ByTenant[s.server.tenant(post(keyB, ""))]; a < 200<<20 || a > 300<<20 || b < 200<<20 {
		t.Fatalf("key A's sessions hold %d MiB, key B's %d MiB; want A's 200 within its 300 MiB share and B's 200", a>>20, b>>20)
	}

	// A holds 2 sessions, its share of 4: the third is refused, B's second is not.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`
	resp, err := http.DefaultClient.Do(post(keyA, init))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "server.per_key.mcp_sessions") {
		t.Fatalf("key A's third session: %d %s, want 429 naming server.per_key.mcp_sessions", resp.StatusCode, body)
	}
	open(keyB)
	mreq, _ := http.NewRequest("GET", s.url+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+keyA)
	mresp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, key := range []string{keyA, keyB} {
		want := `toolshed_mcp_key_sessions{key="` + s.server.tenant(post(key, ""))[:12] + `"} 2`
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("no %s in\n%s", want, metrics)
		}
	}
	if !strings.Contains(string(metrics), "toolshed_mcp_sessions_key_refused_total 1") {
		t.Fatalf("the refusal is not counted:\n%s", metrics)
	}
}

// TestKeySessions: server.per_key.mcp_sessions as serve passes it on:
// set, it is taken; unset, half of server.mcp.max_sessions (at least one)
// with two keys or more, else no share.
func TestKeySessions(t *testing.T) {
	for _, c := range []struct {
		keys, max, set, want int
	}{
		{keys: 0, max: 256, want: 0},
		{keys: 1, max: 256, want: 0},
		{keys: 2, max: 256, want: 128},
		{keys: 3, max: 5, want: 2},
		{keys: 2, max: 1, want: 1},
		{keys: 2, max: 256, set: 10, want: 10},
		{keys: 1, max: 256, set: 10, want: 10},
	} {
		var s config.Server
		s.APIKeys = make([]string, c.keys)
		s.MCP.MaxSessions, s.PerKey.MCPSessions = c.max, c.set
		if got := keySessions(s); got != c.want {
			t.Errorf("%d keys, max_sessions %d, per_key.mcp_sessions %d: %d, want %d", c.keys, c.max, c.set, got, c.want)
		}
	}
}
