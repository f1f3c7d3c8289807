package mcpserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
)

// keyed sends MCP requests with an API key (Options.Tenant reads it).
func keyed(t *testing.T, method, url, key, sid, body string) (*http.Response, []rpcMsg) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", mcpserver.ProtocolVersions[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet {
		return resp, nil // a stream: the status is what counts
	}
	return resp, readMessages(t, resp)
}

// syncBuffer is a log destination the server writes from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSessionBoundToKey: a session belongs to the API key that opened
// it. Key B naming key A's Mcp-Session-Id gets 404, as for a session that
// does not exist, on POST (a call, a notification), GET and DELETE; A's
// session is untouched by all of it, its discovered tool still there.
// No session id reaches the log, at any level.
func TestSessionBoundToKey(t *testing.T) {
	h := testHost(t, nil, "textkit")
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, url := serveMCP(t, h, &mcpserver.Options{Logger: log, Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }})

	resp, msgs := keyed(t, "POST", url, "key-a", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || msgs[0].Error != nil {
		t.Fatalf("initialize: %d %+v", resp.StatusCode, msgs)
	}
	keyed(t, "POST", url, "key-a", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, msgs := keyed(t, "POST", url, "key-a", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`); len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1].Result), "slugify") {
		t.Fatalf("tool_search: %+v", msgs)
	}

	for _, tc := range []struct{ method, key, body string }{
		{"POST", "key-b", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slugify","arguments":{"text":"Stolen Session"}}}`},
		{"POST", "key-b", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`},
		{"POST", "key-b", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`},
		{"POST", "", `{"jsonrpc":"2.0","id":5,"method":"ping"}`},
		{"POST", "KEY-A", `{"jsonrpc":"2.0","id":6,"method":"ping"}`},
		{"GET", "key-b", ""},
		{"DELETE", "key-b", ""},
	} {
		resp, msgs := keyed(t, tc.method, url, tc.key, sid, tc.body)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s with %q: HTTP %d, want 404", tc.method, tc.key, resp.StatusCode)
		}
		if tc.method == "POST" && (len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != -32001) {
			t.Errorf("%s with %q: %+v, want the unknown-session error", tc.method, tc.key, msgs)
		}
	}
	// A's session lives on, slugify still discovered.
	if _, msgs := keyed(t, "POST", url, "key-a", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slugify","arguments":{"text":"Still Mine"}}}`); len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1].Result), "still-mine") {
		t.Fatalf("the owner's call after the attempts: %+v", msgs)
	}
	if resp, _ := keyed(t, "DELETE", url, "key-a", sid, ""); resp.StatusCode/100 != 2 {
		t.Fatalf("the owner's DELETE: %d", resp.StatusCode)
	}
	if strings.Contains(logs.String(), sid) {
		t.Fatalf("the session id is in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "session") {
		t.Fatalf("nothing about sessions was logged (the check above proves nothing):\n%s", logs.String())
	}
}

// TestSessionShareOfKey: one key cannot hold every session slot. With
// MaxSessions 4 and a share of 2, key A's third initialize is refused
// (HTTP 429, a JSON-RPC error naming the share) while key B still gets
// its two; once A closes a session, A gets in again. Nothing is evicted
// here (EvictAfter < 0).
func TestSessionShareOfKey(t *testing.T) {
	h := testHost(t, nil, "textkit")
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 4, MaxSessionsPerTenant: 2, EvictAfter: -1,
		Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }})
	open := func(key string) (int, string, []rpcMsg) {
		t.Helper()
		resp, msgs := keyed(t, "POST", url, key, "", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode == 200 {
			keyed(t, "POST", url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
		return resp.StatusCode, sid, msgs
	}
	var a []string
	for range 2 {
		code, sid, msgs := open("key-a")
		if code != 200 || sid == "" {
			t.Fatalf("key A's session within its share: %d %+v", code, msgs)
		}
		a = append(a, sid)
	}
	code, _, msgs := open("key-a")
	if code != http.StatusTooManyRequests || len(msgs) != 1 || msgs[0].Error == nil || !strings.Contains(msgs[0].Error.Message, "server.per_key.mcp_sessions") {
		t.Fatalf("key A's third session: %d %+v, want 429 naming the share", code, msgs)
	}
	for i := range 2 {
		if code, _, msgs := open("key-b"); code != 200 {
			t.Fatalf("key B's session %d while A is at its share: %d %+v", i, code, msgs)
		}
	}
	if n := s.Sessions(); n != 4 {
		t.Fatalf("%d sessions admitted, want 4 (the refused one holds no slot)", n)
	}
	// A's sessions are untouched by the refusal; closing one frees A's slot.
	if _, msgs := keyed(t, "POST", url, "key-a", a[1], `{"jsonrpc":"2.0","id":2,"method":"ping"}`); len(msgs) != 1 || msgs[0].Error != nil {
		t.Fatalf("key A's session after the refusal: %+v", msgs)
	}
	if resp, _ := keyed(t, "DELETE", url, "key-a", a[0], ""); resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second) // the slot is freed when the SDK has closed the session
	for {
		code, _, msgs := open("key-a")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("key A after closing a session: %d %+v", code, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionShareEvictsOwn: a key at its share whose own sessions are
// idle gets in by closing its own idlest session, never another key's
// (B's sessions are idle longer, and the server has free slots).
func TestSessionShareEvictsOwn(t *testing.T) {
	h := testHost(t, nil, "textkit")
	_, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 8, MaxSessionsPerTenant: 2, EvictAfter: time.Nanosecond,
		Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }})
	open := func(key string) string {
		t.Helper()
		resp, msgs := keyed(t, "POST", url, key, "", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize with %s: %d %+v", key, resp.StatusCode, msgs)
		}
		keyed(t, "POST", url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return sid
	}
	b := []string{open("key-b"), open("key-b")}
	a := []string{open("key-a"), open("key-a")}
	time.Sleep(5 * time.Millisecond) // all idle past EvictAfter
	open("key-a")
	alive := func(key, sid string) bool {
		resp, _ := keyed(t, "POST", url, key, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return resp.StatusCode == 200
	}
	if alive("key-a", a[0]) {
		t.Error("key A's idlest session is still alive: A got past its share")
	}
	if !alive("key-a", a[1]) {
		t.Error("key A's newer session was closed instead of its idlest")
	}
	for _, sid := range b {
		if !alive("key-b", sid) {
			t.Error("key B's session was closed to make room for key A")
		}
	}
}

// TestSessionShareConcurrent: twenty initializes of one key at once take
// exactly its share of 3, the rest refused at the share (not at the
// server's limit); the other key then still gets a session.
func TestSessionShareConcurrent(t *testing.T) {
	h := testHost(t, nil, "textkit")
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 8, MaxSessionsPerTenant: 3, EvictAfter: -1, InitTimeout: time.Hour,
		Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }})
	codes := make(chan int, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := keyed(t, "POST", url, "key-a", "", initBody)
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	if got[200] != 3 || got[http.StatusTooManyRequests] != 17 {
		t.Fatalf("twenty initializes of one key with a share of 3: %v, want 3 × 200 and 17 × 429", got)
	}
	if resp, msgs := keyed(t, "POST", url, "key-b", "", initBody); resp.StatusCode != 200 {
		t.Fatalf("the other key: %d %+v", resp.StatusCode, msgs)
	}
	if n := s.Sessions(); n != 4 {
		t.Fatalf("%d sessions admitted, want 4", n)
	}
}

// tenantSQL is a real SQLite service that records whom each query ran for.
type tenantSQL struct {
	*sqlcap.Service
	mu      sync.Mutex
	tenants []string
}

func (s *tenantSQL) QueryTenantSQL(ctx context.Context, tenant, database string, req abi.SQLRequest) (*abi.SQLReply, error) {
	s.mu.Lock()
	s.tenants = append(s.tenants, tenant)
	s.mu.Unlock()
	return s.Service.QueryTenantSQL(ctx, tenant, database, req)
}

// TestSessionQueriesRunForKey: an MCP session's plugin queries run for
// the key that opened it (its share of the database's slots applies), as
// a chat request's do; none runs for no key.
func TestSessionQueriesRunForKey(t *testing.T) {
	rec := &tenantSQL{Service: demoSQL(t)}
	h := testHost(t, &wasm.Options{SQL: rec, Grants: map[string]wasm.Grants{"sql": {SQL: "default"}}}, "sql")
	_, url := serveMCP(t, h, &mcpserver.Options{Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }})
	for _, key := range []string{"key-a", "key-b"} {
		resp, _ := keyed(t, "POST", url, key, "", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		keyed(t, "POST", url, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		keyed(t, "POST", url, key, sid, callLine(2, "tool_search", map[string]any{"query": "execute sql query"}))
		if _, msgs := keyed(t, "POST", url, key, sid, callLine(3, "executeSql", map[string]any{"sql": "SELECT 42 AS answer"})); len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1].Result), "42") {
			t.Fatalf("%s: executeSql: %+v", key, msgs)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.tenants, []string{"Bearer key-a", "Bearer key-b"}) {
		t.Fatalf("the queries ran for %q, want one for each key", rec.tenants)
	}
}
