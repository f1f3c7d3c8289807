package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/redistest"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

const replicaKeyA, replicaKeyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"

// storeReplicas starts n toolshed serve processes sharing the session
// store at storeURL, over the bundled textkit and chart plugins, with two
// API keys (each limited to keySessions MCP sessions) and a scripted
// model.
func storeReplicas(t *testing.T, n int, storeURL string, keySessions int) []*replica {
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
  per_key: {mcp_sessions: %d}
  mcp: {max_sessions: 100, evict_after: 0s}
  sessions: {store: %q}
log: {level: info}
`, up.URL+"/v1", plugins, filepath.Join(dir, "cache"), grants, replicaKeyA, replicaKeyB, keySessions, storeURL)
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
	code, id, b, err := mcpTry(url, key, sid, body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return code, id, b
}

// mcpTry is mcpPost for any goroutine: the transport's error returned.
func mcpTry(url, key, sid, body string) (int, string, string, error) {
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
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), err
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
	reps := storeReplicas(t, 2, redis.URL, 2)
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
	reps := storeReplicas(t, 2, redis.URL, 2)
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

// storeOutage is short in go test; make replicas gives the 20 s of the
// figures in docs/DEPLOY.md.
var storeOutage = flag.Duration("store-outage", 5*time.Second, "TestReplicasStoreOutage: how long redis-server stays down")

// phaseCount counts one phase's requests.
type phaseCount struct{ served, failed atomic.Int64 }

// TestReplicasStoreOutage: redis-server is killed for -store-outage (5 s;
// make replicas: 20 s)
// while clients loop: four sessions opened before it, each calling
// slugify on both replicas in turn, and a client opening, using and
// deleting sessions on either replica. Throughout, both replicas stay
// ready; the sessions from before keep being served by both (each holds
// them); sessions created meanwhile work on the replica that made them;
// the store's outage shows in metrics. When redis-server returns (empty),
// every session converges: each is served by both replicas again, the
// ones made during the outage included. make replicas prints the figures
// (docs/DEPLOY.md).
func TestReplicasStoreOutage(t *testing.T) {
	redis := redistest.Start(t)
	reps := storeReplicas(t, 2, redis.URL, 50)
	keys := []string{replicaKeyA, replicaKeyB}
	discover := func(url, key, sid string) error {
		code, _, body, err := mcpTry(url, key, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`)
		if err == nil && (code != 200 || !strings.Contains(body, "slugify")) {
			err = fmt.Errorf("tool_search: %d %.200s", code, body)
		}
		return err
	}
	// checkID: the convergence check's calls run beside the loop's in the
	// same sessions, so under another JSON-RPC id (one id may not be in
	// flight twice in a session).
	var checkID atomic.Int64
	checkID.Store(1000)
	slugAs := func(id int64, url, key, sid string) error {
		body := strings.Replace(slugCall, `"id":7`, fmt.Sprintf(`"id":%d`, id), 1)
		code, _, body, err := mcpTry(url, key, sid, body)
		if err == nil && (code != 200 || !strings.Contains(body, "hello-world") || strings.Contains(body, `"isError":true`)) {
			err = fmt.Errorf("slugify: %d %.200s", code, body)
		}
		return err
	}
	slug := func(url, key, sid string) error { return slugAs(7, url, key, sid) }
	type session struct{ key, sid string }
	var before []session
	for i := range 4 {
		key := keys[i%2]
		sid, code := mcpOpen(t, reps[i%2].url, key)
		if code != 200 {
			t.Fatalf("open: %d", code)
		}
		if err := discover(reps[i%2].url, key, sid); err != nil {
			t.Fatal(err)
		}
		before = append(before, session{key, sid})
		for _, r := range reps { // each replica holds it from here
			if err := slug(r.url, key, sid); err != nil {
				t.Fatal(err)
			}
		}
	}

	var phase atomic.Int32 // 0 before, 1 store down, 2 after
	var counts [3]phaseCount
	var firstErr [3]atomic.Value
	count := func(err error) {
		p := phase.Load()
		if err != nil {
			counts[p].failed.Add(1)
			firstErr[p].CompareAndSwap(nil, err.Error())
			return
		}
		counts[p].served.Add(1)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range before {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				count(slug(reps[n%2].url, s.key, s.sid))
			}
		})
	}
	var madeDuring atomic.Pointer[session] // a session made while the store was down, kept
	var madeOn atomic.Int32
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			url, key := reps[n%2].url, keys[n%2]
			p := phase.Load()
			code, sid, _, err := mcpTry(url, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`)
			if err == nil && (code != 200 || sid == "") {
				err = fmt.Errorf("initialize: %d", code)
			}
			if err == nil {
				if code, _, _, err = mcpTry(url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err == nil && code != 202 {
					err = fmt.Errorf("initialized: %d", code)
				}
			}
			if err == nil {
				err = discover(url, key, sid)
			}
			if err == nil {
				err = slug(url, key, sid)
			}
			count(err)
			if err != nil {
				continue
			}
			if p == 1 && madeDuring.Load() == nil {
				madeDuring.Store(&session{key, sid}) // kept for after
				madeOn.Store(int32(n % 2))
				continue
			}
			req, _ := http.NewRequest("DELETE", url+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Mcp-Session-Id", sid)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	})
	ready := func() bool {
		for _, r := range reps {
			resp, err := http.Get(r.url + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return false
			}
		}
		return true
	}
	metric := func(r *replica, name string) string {
		_, body := send(t, "GET", r.url+"/metrics", replicaKeyA, "")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, name+" ") {
				return line[strings.LastIndex(line, " ")+1:]
			}
		}
		return ""
	}

	waitFor(t, 60*time.Second, func() bool { return counts[0].served.Load() >= 20 }, "the loop under way")
	redis.Stop()
	phase.Store(1)
	down := time.Now()
	notReady := 0
	for time.Since(down) < *storeOutage {
		if !ready() {
			notReady++
		}
		time.Sleep(500 * time.Millisecond)
	}
	storeUp := metric(reps[0], "toolshed_session_store_up")
	redis.Restart()
	phase.Store(2)
	back := time.Now()

	// Convergence: every session is served by both replicas again, the
	// one made during the outage after a request to its own replica.
	all := append([]session(nil), before...)
	if m := madeDuring.Load(); m != nil {
		if err := slug(reps[madeOn.Load()].url, m.key, m.sid); err != nil {
			t.Fatalf("the session made during the outage, on its replica: %v", err)
		}
		all = append(all, *m)
	}
	var last error
	deadline := time.Now().Add(60 * time.Second)
	for converging := true; converging; {
		converging = false
		for _, s := range all {
			for _, r := range reps {
				if err := slugAs(checkID.Add(1), r.url, s.key, s.sid); err != nil {
					last, converging = fmt.Errorf("session %.8s on %s: %w", s.sid, r.url, err), true
				}
			}
		}
		if converging && time.Now().After(deadline) {
			t.Fatalf("not every session is served by both replicas a minute after the store came back: %v\nA's log:\n%s\nB's log:\n%s", last, reps[0].logs.String(), reps[1].logs.String())
		}
	}
	converged := time.Since(back)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	for p, name := range []string{"before", "store down", "after"} {
		t.Logf("%s: %d requests served, %d failed", name, counts[p].served.Load(), counts[p].failed.Load())
	}
	t.Logf("store down %s: replicas not ready at %d of the checks; toolshed_session_store_up %s while down; made during the outage: %v; every session on both replicas %s after the store returned",
		storeOutage.String(), notReady, storeUp, madeDuring.Load() != nil, converged.Round(time.Millisecond))
	for p := range counts {
		if counts[p].failed.Load() > 0 {
			t.Errorf("phase %d: %d requests failed; the first: %v", p, counts[p].failed.Load(), firstErr[p].Load())
		}
		if counts[p].served.Load() == 0 {
			t.Errorf("phase %d: no request served", p)
		}
	}
	if notReady > 0 {
		t.Errorf("a replica was not ready %d times while the store was down", notReady)
	}
	if storeUp != "0" {
		t.Errorf("toolshed_session_store_up %q while the store was down, want 0", storeUp)
	}
	if madeDuring.Load() == nil {
		t.Error("no session was made while the store was down")
	}
}
