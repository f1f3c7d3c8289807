package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/redistest"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

const replicaKeyA, replicaKeyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"

// storeReplicas starts n toolshed serve processes sharing the session
// store at storeURL, over the bundled textkit plugin, with two API keys
// (each limited to 2 MCP sessions) and a scripted model.
func storeReplicas(t *testing.T, n int, storeURL string) []*replica {
	t.Helper()
	bin := hostileBinary(t)
	plugins := wasmbuild.Bundled(t, "../..", "textkit", "chart")
	up := httptest.NewServer(&scripted.Model{NoRecord: true})
	t.Cleanup(up.Close)
	var reps []*replica
	for range n {
		dir := t.TempDir()
		grants := filepath.Join(dir, "grants.json")
		if err := os.WriteFile(grants, []byte(`{"plugins": {"chart": {"artifacts": "`+filepath.Join(dir, "artifacts")+`"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf(`model: {base_url: %q, name: scripted, retries: 0}
plugins: {dir: %q, cache_dir: %q, grants: %q}
search: {mode: keyword}
agent: {time: false, todo: false}
server:
  addr: "127.0.0.1:0"
  shutdown_timeout: 10s
  api_keys: [%s, %s]
  per_key: {mcp_sessions: 2}
  mcp: {max_sessions: 10, evict_after: 0s}
  sessions: {store: %q}
log: {level: info}
`, up.URL+"/v1", plugins, filepath.Join(dir, "cache"), grants, replicaKeyA, replicaKeyB, storeURL)
		path := filepath.Join(dir, "toolshed.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		r := startReplica(t, bin, path)
		r.waitReady(t, 60*time.Second)
		reps = append(reps, r)
	}
	return reps
}

// waitReady waits for /readyz to answer 200.
func (r *replica) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, func() bool {
		resp, err := http.Get(r.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, "replica ready: "+r.logs.String())
}

// mcpPost sends one MCP message with key (and the session id, when set)
// and returns the status, the session id the answer names, and the body.
func mcpPost(t *testing.T, url, key, sid, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// mcpOpen initializes a session of key on url: its id, or "" and the
// status of the refusal.
func mcpOpen(t *testing.T, url, key string) (string, int) {
	t.Helper()
	code, sid, body := mcpPost(t, url, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if code != 200 {
		return "", code
	}
	if sid == "" {
		t.Fatalf("initialize on %s: no session id: %s", url, body)
	}
	if code, _, body := mcpPost(t, url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != 202 {
		t.Fatalf("initialized on %s: %d %s", url, code, body)
	}
	return sid, 200
}

const (
	slugCall  = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slugify","arguments":{"text":"Hello World"}}}`
	toolsList = `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`
)

// TestReplicasShareSessions: two toolshed serve processes and a real
// redis-server (server.sessions.store). A key limited to 2 MCP sessions
// gets its third refused whichever replica it asks. The Go SDK's client
// initialises and discovers slugify on replica A; A is killed; the same
// session's next tools/call of slugify, sent to B with no new initialize,
// succeeds, and tools/list on B shows slugify. Another key naming the
// session on B gets 404.
func TestReplicasShareSessions(t *testing.T) {
	redis := redistest.Start(t)
	reps := storeReplicas(t, 2, redis.URL)
	a, b := reps[0], reps[1]

	// Fleet-wide share: key B opens one on each replica, its third is
	// refused on both.
	for _, r := range reps {
		if _, code := mcpOpen(t, r.url, replicaKeyB); code != 200 {
			t.Fatalf("key B's session on %s: %d", r.url, code)
		}
	}
	for _, r := range reps {
		if _, code := mcpOpen(t, r.url, replicaKeyB); code != http.StatusTooManyRequests {
			t.Fatalf("key B's third session on %s: %d, want 429", r.url, code)
		}
	}

	cs, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(replicaKeyA)}, MaxRetries: -1}, "")
	if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "url slug"}); isErr || !strings.Contains(text, "slugify") {
		t.Fatalf("tool_search on A: %q", text)
	}
	sid := cs.ID()
	a.cmd.Process.Kill()
	<-a.done

	if code, _, body := mcpPost(t, b.url, replicaKeyB, sid, toolsList); code != 404 {
		t.Fatalf("key B naming key A's session on B: %d %s", code, body)
	}
	code, _, body := mcpPost(t, b.url, replicaKeyA, sid, slugCall)
	if code != 200 || !strings.Contains(body, "hello-world") || strings.Contains(body, `"isError":true`) {
		t.Fatalf("slugify on B, same session, no initialize: %d %s\nB's log:\n%s", code, body, b.logs.String())
	}
	if code, _, body := mcpPost(t, b.url, replicaKeyA, sid, toolsList); code != 200 || !strings.Contains(body, `"name":"slugify"`) {
		t.Fatalf("tools/list on B: %d %s", code, body)
	}
	if !strings.Contains(b.logs.String(), "mcp session adopted from the store") {
		t.Errorf("B's log does not say it adopted the session:\n%s", b.logs.String())
	}
}

// TestReplicasArtifacts: a chart made through replica A's chat endpoint
// is downloaded from replica B by its link's id after A is killed: the
// same bytes, type and protections, with no shared volume.
func TestReplicasArtifacts(t *testing.T) {
	redis := redistest.Start(t)
	reps := storeReplicas(t, 2, redis.URL)
	a, b := reps[0], reps[1]
	ask := `use createBarChart with {"title":"Orders","labels":["Paris","Lyon"],"series":[{"name":"n","values":[3,4]}]} to bar chart`
	req, _ := http.NewRequest("POST", a.url+"/v1/chat/completions", strings.NewReader(`{"model":"scripted","messages":[{"role":"user","content":`+strconv.Quote(ask)+`}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+replicaKeyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Toolshed struct {
			Artifacts []struct{ ID, URL string }
		}
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if len(out.Toolshed.Artifacts) != 1 {
		t.Fatalf("chart on A: %d %+v\n%s", resp.StatusCode, out, a.logs.String())
	}
	id := out.Toolshed.Artifacts[0].ID
	_, onA := send(t, "GET", a.url+"/v1/artifacts/"+id, replicaKeyA, "")
	a.cmd.Process.Kill()
	<-a.done

	r, onB := send(t, "GET", b.url+"/v1/artifacts/"+id, replicaKeyA, "")
	if r.StatusCode != 200 || onB != onA || !strings.Contains(onB, "Paris") || r.Header.Get("Content-Type") != "image/svg+xml" ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("A's artifact from B: %d %v %.80s", r.StatusCode, r.Header, onB)
	}
	if r, _ := send(t, "GET", b.url+"/v1/artifacts/0123456789abcdef0123456789abcdef-none.svg", replicaKeyA, ""); r.StatusCode != 404 {
		t.Fatalf("an id never made, on B: %d", r.StatusCode)
	}
}
