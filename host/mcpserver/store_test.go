package mcpserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/internal/redistest"
	"github.com/toolshed/toolshed/internal/sessionstore"
)

// replica is one serve process's MCP front end on a shared store: its own
// host (its own plugin instances), its own HTTP server.
type replica struct {
	s   *mcpserver.Server
	url string
	srv *httptest.Server
}

func replicas(t *testing.T, n int, opts mcpserver.Options, storeURL string, log *slog.Logger) []*replica {
	t.Helper()
	return replicasOf(t, n, opts, storeURL, log, func() *host.Host { return testHost(t, nil, "textkit") })
}

// replicasOf is replicas over the hosts mk makes, one per replica.
func replicasOf(t *testing.T, n int, opts mcpserver.Options, storeURL string, log *slog.Logger, mk func() *host.Host) []*replica {
	t.Helper()
	var out []*replica
	for range n {
		st, err := sessionstore.Open(storeURL, &sessionstore.Options{Logger: log, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o := opts
		o.Store = st
		o.Logger = log
		o.Tenant = func(r *http.Request) string { return r.Header.Get("Authorization") }
		s := mcpserver.New(mk(), &o)
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		out = append(out, &replica{s: s, url: srv.URL, srv: srv})
	}
	return out
}

// open initializes a session of key on url and returns its id ("" and
// the status when refused).
func open(t *testing.T, url, key string) (string, int) {
	t.Helper()
	resp, msgs := keyed(t, "POST", url, key, "", initBody)
	if resp.StatusCode != 200 {
		return "", resp.StatusCode
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" || len(msgs) != 1 || msgs[0].Error != nil {
		t.Fatalf("initialize: %+v", msgs)
	}
	if resp, _ := keyed(t, "POST", url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return sid, 200
}

func call(t *testing.T, url, key, sid, body string) (int, string) {
	t.Helper()
	resp, msgs := keyed(t, "POST", url, key, sid, body)
	var b strings.Builder
	for _, m := range msgs {
		b.Write(m.Result)
		if m.Error != nil {
			b.WriteString("error: " + m.Error.Message)
		}
	}
	return resp.StatusCode, b.String()
}

const (
	searchSlug = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`
	callSlug   = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slugify","arguments":{"text":"Hello World"}}}`
	listTools  = `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`
)

// TestStoreAnyReplica: a session initialised and discovering on A is
// served by B after A is gone, with no new initialize: the discovered
// tool runs on B and tools/list on B shows it. Another key naming the
// session gets 404 on B as on A. What B discovers reaches A; a DELETE on
// B ends the session on A too.
func TestStoreAnyReplica(t *testing.T) {
	redis := redistest.Start(t)
	rs := replicas(t, 3, mcpserver.Options{}, redis.URL, nil)
	a, b, c := rs[0], rs[1], rs[2]

	sid, _ := open(t, a.url, "key-a")
	if code, out := call(t, a.url, "key-a", sid, searchSlug); code != 200 || !strings.Contains(out, "slugify") {
		t.Fatalf("tool_search on A: %d %s", code, out)
	}
	a.srv.CloseClientConnections()
	a.srv.Close() // A is gone

	if code, out := call(t, b.url, "key-b", sid, listTools); code != 404 {
		t.Fatalf("another key naming the session on B: %d %s", code, out)
	}
	if code, out := call(t, b.url, "key-a", sid, callSlug); code != 200 || !strings.Contains(out, "hello-world") || strings.Contains(out, `"isError":true`) {
		t.Fatalf("the discovered tool on B: %d %s", code, out)
	}
	if code, out := call(t, b.url, "key-a", sid, listTools); code != 200 || !strings.Contains(out, `"slugify"`) {
		t.Fatalf("tools/list on B: %d %s", code, out)
	}

	// C adopts too; B discovers more; C sees it on its next request.
	if code, out := call(t, c.url, "key-a", sid, listTools); code != 200 || !strings.Contains(out, `"slugify"`) {
		t.Fatalf("tools/list on C: %d %s", code, out)
	}
	if code, out := call(t, b.url, "key-a", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"word count of a text"}}}`); code != 200 {
		t.Fatalf("second search on B: %d %s", code, out)
	}
	_, onB := call(t, b.url, "key-a", sid, listTools)
	_, onC := call(t, c.url, "key-a", sid, listTools)
	if onB != onC {
		t.Fatalf("tools/list on B and C differ:\nB %s\nC %s", onB, onC)
	}

	// Another key's DELETE, on any replica, ends nothing.
	if resp, _ := keyed(t, "DELETE", c.url, "key-b", sid, ""); resp.StatusCode != 404 {
		t.Fatalf("another key's DELETE on C: %d", resp.StatusCode)
	}
	if code, out := call(t, c.url, "key-a", sid, listTools); code != 200 || !strings.Contains(out, `"slugify"`) {
		t.Fatalf("after another key's DELETE: %d %s", code, out)
	}
	// An id no replica could have made is refused without a look in the
	// store.
	if code, out := call(t, b.url, "key-a", strings.Repeat("A", 200), listTools); code != 404 {
		t.Fatalf("a 200-character id: %d %s", code, out)
	}

	// DELETE on B ends it on C as well.
	if resp, _ := keyed(t, "DELETE", b.url, "key-a", sid, ""); resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE on B: %d", resp.StatusCode)
	}
	if code, out := call(t, c.url, "key-a", sid, listTools); code != 404 {
		t.Fatalf("the deleted session on C: %d %s", code, out)
	}
	waitFor(t, "C to close its copy", func() bool { return c.s.Sessions() == 0 })
}

// TestStoreFleetLimits: a key limited to 2 sessions gets its third
// refused whichever replica it asks; another key still gets in; the
// fleet's max_sessions holds across replicas.
func TestStoreFleetLimits(t *testing.T) {
	redis := redistest.Start(t)
	rs := replicas(t, 2, mcpserver.Options{MaxSessions: 4, MaxSessionsPerTenant: 2, EvictAfter: -1}, redis.URL, nil)
	a, b := rs[0], rs[1]
	if _, code := open(t, a.url, "key-a"); code != 200 {
		t.Fatal(code)
	}
	first, code := open(t, b.url, "key-a")
	if code != 200 {
		t.Fatal(code)
	}
	for _, r := range rs {
		if _, code := open(t, r.url, "key-a"); code != http.StatusTooManyRequests {
			t.Fatalf("key A's third session: %d, want 429", code)
		}
	}
	for _, r := range rs {
		if _, code := open(t, r.url, "key-b"); code != 200 {
			t.Fatalf("key B: %d", code)
		}
	}
	// 4 alive in the fleet: the fifth is refused on either replica.
	for _, r := range rs {
		if _, code := open(t, r.url, "key-c"); code != http.StatusServiceUnavailable {
			t.Fatalf("a fifth session in the fleet: %d, want 503", code)
		}
	}
	// Closing one of A's sessions (on B, where it lives) frees A's slot
	// for the fleet.
	if resp, _ := keyed(t, "DELETE", b.url, "key-a", first, ""); resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	waitFor(t, "key A's slot", func() bool { _, code := open(t, a.url, "key-a"); return code == 200 })
}

// TestStoreOutage: with the store gone, a session keeps working on its
// replica, new ones are made there under the same limits counted by the
// replica alone (never none), and the log says so once; when the store
// returns empty, the sessions the replica holds are saved again and
// another replica can serve them.
func TestStoreOutage(t *testing.T) {
	redis := redistest.Start(t)
	var log syncBuffer
	rs := replicas(t, 2, mcpserver.Options{MaxSessions: 10, MaxSessionsPerTenant: 2, EvictAfter: -1}, redis.URL,
		slog.New(slog.NewTextHandler(&log, nil)))
	a, b := rs[0], rs[1]
	sid, _ := open(t, a.url, "key-a")
	if code, out := call(t, a.url, "key-a", sid, searchSlug); code != 200 || !strings.Contains(out, "slugify") {
		t.Fatalf("tool_search: %d %s", code, out)
	}

	redis.Stop()
	if code, out := call(t, a.url, "key-a", sid, callSlug); code != 200 || !strings.Contains(out, "hello-world") {
		t.Fatalf("the session on its replica, store down: %d %s", code, out)
	}
	during, code := open(t, a.url, "key-a")
	if code != 200 {
		t.Fatalf("a new session, store down: %d", code)
	}
	if _, code := open(t, a.url, "key-a"); code != http.StatusTooManyRequests {
		t.Fatalf("key A's third session on one replica, store down: %d, want 429 (the replica's own count)", code)
	}
	if code, out := call(t, a.url, "key-a", during, searchSlug); code != 200 || !strings.Contains(out, "slugify") {
		t.Fatalf("tool_search in the session made during the outage: %d %s", code, out)
	}
	if !strings.Contains(log.String(), "session store unreachable") {
		t.Fatalf("no log line for the outage:\n%s", log.String())
	}

	redis.Restart() // empty
	// The client goes on using A; once A tries the store again (its
	// backoff is over), it saves both sessions, and B serves them.
	converged(t, "both sessions and their tool on B after the store came back", func() string {
		for _, s := range []string{sid, during} {
			if code, out := call(t, a.url, "key-a", s, listTools); code != 200 {
				t.Fatalf("on A after the store came back: %d %s", code, out)
			}
			if code, out := call(t, b.url, "key-a", s, callSlug); code != 200 || !strings.Contains(out, "hello-world") {
				return fmt.Sprintf("session %.6s on B: %d %s", s, code, out)
			}
		}
		return ""
	})
	// The fleet counts them again: key A holds 2.
	if _, code := open(t, b.url, "key-a"); code != http.StatusTooManyRequests {
		t.Fatalf("key A's third session after the store came back: %d, want 429", code)
	}
}

// TestStoreAdoptOnce: twenty requests of one session arriving at once at
// a replica that has never seen it adopt it once: all are served, and the
// replica holds one session.
func TestStoreAdoptOnce(t *testing.T) {
	redis := redistest.Start(t)
	rs := replicas(t, 2, mcpserver.Options{}, redis.URL, nil)
	a, b := rs[0], rs[1]
	sid, _ := open(t, a.url, "key-a")
	if code, out := call(t, a.url, "key-a", sid, searchSlug); code != 200 || !strings.Contains(out, "slugify") {
		t.Fatalf("tool_search on A: %d %s", code, out)
	}
	var wg sync.WaitGroup
	codes := make(chan string, 20)
	for i := range 20 {
		wg.Go(func() {
			code, out := call(t, b.url, "key-a", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 100+i))
			if code != 200 || !strings.Contains(out, `"slugify"`) {
				codes <- fmt.Sprint(code, " ", out)
			}
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		t.Fatalf("a concurrent first request on B: %s", c)
	}
	if n := b.s.Sessions(); n != 1 {
		t.Fatalf("B holds %d sessions after twenty concurrent first requests of one, want 1", n)
	}
}

// TestStoreBadRecord: a record a replica cannot adopt (initialize
// parameters the SDK refuses) is answered 404, as an unknown session, and
// leaves nothing held (an unreadable record: sessionstore's
// TestCorruptRecord).
func TestStoreBadRecord(t *testing.T) {
	redis := redistest.Start(t)
	var log syncBuffer
	rs := replicas(t, 1, mcpserver.Options{}, redis.URL, slog.New(slog.NewTextHandler(&log, nil)))
	st, err := sessionstore.Open(redis.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Save(ctx, "bad-params", &sessionstore.Record{Tenant: "Bearer key-a", Protocol: "2025-06-18",
		Initialize: []byte(`{"protocolVersion":"2025-06-18","capabilities":5}`)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"bad-params"} {
		if code, out := call(t, rs[0].url, "key-a", sid, listTools); code != 404 {
			t.Fatalf("session %s: %d %s", sid, code, out)
		}
	}
	waitFor(t, "the failed adoption to free its slot", func() bool { return rs[0].s.Sessions() == 0 })
	if !strings.Contains(log.String(), "could not be made here") {
		t.Fatalf("no log line for the failed adoption:\n%s", log.String())
	}
}

// BenchmarkStoreRequest: one tools/list of a live session through the
// HTTP handler, with and without a store (a real redis-server on
// 127.0.0.1): what the store's round trip per request costs.
//
//	go test -run '^$' -bench BenchmarkStoreRequest ./host/mcpserver/
func BenchmarkStoreRequest(b *testing.B) {
	redis := redistest.Start(b)
	st, err := sessionstore.Open(redis.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := testHost(b, nil)
	for _, bc := range []struct {
		name  string
		store sessionstore.Store
	}{{"memory", nil}, {"store", st}} {
		b.Run(bc.name, func(b *testing.B) {
			_, url := serveMCP(b, h, &mcpserver.Options{Store: bc.store})
			c := &raw{t: b, url: url}
			c.initialize(true)
			for i := 0; b.Loop(); i++ {
				if resp, _ := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+10)); resp.StatusCode != 200 {
					b.Fatal(resp.StatusCode)
				}
			}
		})
	}
}

// TestStoreMissedSave: a store that hangs (paused) while a replica's
// session discovers a tool misses the save; the session keeps working
// there, and once the store answers again the replica saves what it
// missed at the session's next request, so another replica serves the
// tool.
func TestStoreMissedSave(t *testing.T) {
	redis := redistest.Start(t)
	rs := replicas(t, 2, mcpserver.Options{}, redis.URL, nil)
	a, b := rs[0], rs[1]
	sid, _ := open(t, a.url, "key-a")
	if code, _ := call(t, b.url, "key-a", sid, listTools); code != 200 { // B holds it too
		t.Fatalf("tools/list on B: %d", code)
	}
	redis.Pause()
	if code, out := call(t, a.url, "key-a", sid, searchSlug); code != 200 || !strings.Contains(out, "slugify") {
		redis.Resume()
		t.Fatalf("tool_search on A, store hung: %d %s", code, out)
	}
	redis.Resume()
	converged(t, "slugify on B, discovered on A while the store hung", func() string {
		if code, out := call(t, a.url, "key-a", sid, callSlug); code != 200 || !strings.Contains(out, "hello-world") {
			t.Fatalf("slugify on A after: %d %s", code, out)
		}
		if code, out := call(t, b.url, "key-a", sid, callSlug); code != 200 || !strings.Contains(out, "hello-world") {
			return fmt.Sprintf("%d %s", code, out)
		}
		return ""
	})
}

// converged waits until check returns "" (trying every 100 ms; the store's
// backoff is at most 5 s), failing with its last answer after a minute.
func converged(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		last := check()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStoreKeepsLogLevel: the client's logging/setLevel travels with the
// session. Set on A, then A gone: B, adopting the session, sends the
// plugin's error-level log and holds back its info-level one, as A would
// have. Set again on C while B holds the session too: B logs at the new
// level on its next request.
func TestStoreKeepsLogLevel(t *testing.T) {
	redis := redistest.Start(t)
	rs := replicasOf(t, 3, mcpserver.Options{}, redis.URL, nil, func() *host.Host { return clientHost(t, allClient) })
	a, b, c := rs[0], rs[1], rs[2]
	setLevel := func(r *replica, sid, level string) {
		t.Helper()
		if code, out := call(t, r.url, "key-a", sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"`+level+`"}}`); code != 200 || strings.Contains(out, "error") {
			t.Fatalf("setLevel %s: %d %s", level, code, out)
		}
	}
	// logs calls the plugin's clientLog at level and counts the log
	// messages that reached the client.
	logs := func(r *replica, sid, level string) int {
		t.Helper()
		resp, msgs := keyed(t, "POST", r.url, "key-a", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"clientLog","arguments":{"level":"`+level+`","message":"m"}}}`)
		n := 0
		for _, m := range msgs {
			if m.Method == "notifications/message" {
				n++
			}
		}
		if resp.StatusCode != 200 || len(msgs) == 0 || msgs[len(msgs)-1].Error != nil || strings.Contains(string(msgs[len(msgs)-1].Result), `"isError":true`) {
			t.Fatalf("clientLog %s: %d %+v", level, resp.StatusCode, msgs)
		}
		return n
	}
	sid, _ := open(t, a.url, "key-a")
	setLevel(a, sid, "warning")
	if n := logs(a, sid, "error"); n != 1 {
		t.Fatalf("error-level log on A: %d messages, want 1", n)
	}
	a.srv.CloseClientConnections()
	a.srv.Close()

	if n := logs(b, sid, "info"); n != 0 {
		t.Fatalf("info-level log on B under warning: %d messages, want 0", n)
	}
	if n := logs(b, sid, "error"); n != 1 {
		t.Fatalf("error-level log on B: %d messages, want 1 (the level was lost with A)", n)
	}
	logs(c, sid, "error") // C adopts it too
	setLevel(c, sid, "debug")
	if n := logs(b, sid, "info"); n != 1 {
		t.Fatalf("info-level log on B after debug was set on C: %d messages, want 1", n)
	}
}
