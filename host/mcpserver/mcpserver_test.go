package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// testHost is a host over the named bundled plugins, built and pinned,
// with one always-on tool, wait_ms, that waits (for cancellation tests);
// wopts are the plugin runtime's options (grants, artifact store).
func testHost(t testing.TB, wopts *wasm.Options, plugins ...string) *host.Host {
	t.Helper()
	dir := wasmbuild.Bundled(t, "../..", plugins...)
	snap, err := catalog.Load(dir, nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	wo := wasm.Options{}
	if wopts != nil {
		wo = *wopts
	}
	wo.CacheDir = filepath.Join(os.TempDir(), "toolshed-test-cache")
	rt, err := wasm.New(&wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h, err := host.New(host.Options{Client: openai.NewClientWithConfig(openai.DefaultConfig("")), Model: "none",
		Catalog: func() *catalog.Snapshot { return snap }, Runtime: rt, Search: host.SearchOptions{Mode: host.ModeKeyword},
		Tools: []host.GoTool{{Name: "wait_ms", Description: "Waits ms milliseconds.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`),
			Call: func(ctx context.Context, args json.RawMessage) (host.Result, error) {
				var a struct{ MS int }
				json.Unmarshal(args, &a)
				select {
				case <-time.After(time.Duration(a.MS) * time.Millisecond):
					return host.Result{Content: "waited"}, nil
				case <-ctx.Done():
					return host.Result{Content: "cancelled", IsError: true}, nil
				}
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serveMCP(t testing.TB, h *host.Host, opts *mcpserver.Options) (*mcpserver.Server, string) {
	t.Helper()
	s := mcpserver.New(h, opts)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// raw is an MCP client over plain HTTP: no standalone GET stream, every
// byte visible.
type raw struct {
	t   testing.TB
	url string
	sid string
}

type rpcMsg struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params json.RawMessage `json:"params"`
}

// post sends one body and returns the response and the JSON-RPC messages
// in it (SSE events or one JSON body), in order.
func (c *raw) post(body string) (*http.Response, []rpcMsg) {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", mcpserver.ProtocolVersions[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.sid = id
	}
	return resp, readMessages(c.t, resp)
}

func readMessages(t testing.TB, resp *http.Response) []rpcMsg {
	t.Helper()
	data, _ := io.ReadAll(resp.Body)
	var out []rpcMsg
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(d) != "" {
				var m rpcMsg
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("event %q: %v", d, err)
				}
				out = append(out, m)
			}
		}
		return out
	}
	if len(bytes.TrimSpace(data)) > 0 {
		var m rpcMsg
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("body %q (%s): %v", data, resp.Header.Get("Content-Type"), err)
		}
		out = append(out, m)
	}
	return out
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func (c *raw) initialize(initialized bool) {
	c.t.Helper()
	resp, msgs := c.post(initBody)
	if resp.StatusCode != 200 || len(msgs) != 1 || msgs[0].Error != nil {
		c.t.Fatalf("initialize: %d %+v", resp.StatusCode, msgs)
	}
	if initialized {
		if resp, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
			c.t.Fatalf("initialized: %d", resp.StatusCode)
		}
	}
}

func connect(t testing.TB, url string, changed chan<- string) (*mcp.ClientSession, error) {
	opts := &mcp.ClientOptions{}
	if changed != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { changed <- "changed" }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAdmission: with a limit of 3, 20 clients connecting at once get 3
// sessions; the others a JSON-RPC refusal. A session that leaves frees
// its slot.
func TestAdmission(t *testing.T) {
	h := testHost(t, nil)
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 3})
	var (
		mu       sync.Mutex
		sessions []*mcp.ClientSession
		refused  []error
		wg       sync.WaitGroup
	)
	for range 20 {
		wg.Go(func() {
			cs, err := connect(t, url, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
			} else {
				sessions = append(sessions, cs)
			}
		})
	}
	wg.Wait()
	if len(sessions) != 3 || s.Sessions() != 3 {
		t.Fatalf("%d clients admitted (%d sessions), want 3; refusals: %v", len(sessions), s.Sessions(), refused)
	}
	for _, err := range refused {
		if !strings.Contains(err.Error(), "Service Unavailable") {
			t.Fatalf("refusal: %v", err)
		}
	}
	// The refusal is a JSON-RPC error response.
	resp, msgs := (&raw{t: t, url: url}).post(initBody)
	if resp.StatusCode != 503 || len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != -32000 || msgs[0].ID != float64(1) {
		t.Fatalf("refusal: %d %+v", resp.StatusCode, msgs)
	}
	sessions[0].Close()
	waitFor(t, "the slot to free", func() bool { return s.Sessions() == 2 })
	if _, err := connect(t, url, nil); err != nil {
		t.Fatalf("after a client left: %v", err)
	}
}

// TestInitTimeout: clients that stop after initialize hold a slot only
// until InitTimeout.
func TestInitTimeout(t *testing.T) {
	h := testHost(t, nil)
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 2, InitTimeout: time.Second})
	for range 2 {
		(&raw{t: t, url: url}).initialize(false)
	}
	if s.Sessions() != 2 {
		t.Fatalf("%d sessions", s.Sessions())
	}
	if resp, _ := (&raw{t: t, url: url}).post(initBody); resp.StatusCode != 503 {
		t.Fatalf("third initialize: %d", resp.StatusCode)
	}
	waitFor(t, "the uninitialized sessions to be dropped", func() bool { return s.Sessions() == 0 })
	// A client that completes initialization keeps its session past it.
	c := &raw{t: t, url: url}
	c.initialize(true)
	time.Sleep(1500 * time.Millisecond)
	if resp, msgs := c.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != 200 || len(msgs) != 1 || msgs[0].Error != nil {
		t.Fatalf("ping after init timeout: %d %+v", resp.StatusCode, msgs)
	}
}

// TestListChangedOnPOSTStream: a client with no GET stream gets
// notifications/tools/list_changed on the response stream of its
// tool_search call, before the result; exactly once.
func TestListChangedOnPOSTStream(t *testing.T) {
	h := testHost(t, nil, "textkit")
	_, url := serveMCP(t, h, nil)
	c := &raw{t: t, url: url}
	c.initialize(true)
	resp, msgs := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`)
	if resp.StatusCode != 200 || len(msgs) != 2 || msgs[0].Method != "notifications/tools/list_changed" || msgs[1].ID != float64(2) {
		t.Fatalf("tool_search stream: %d %+v", resp.StatusCode, msgs)
	}
	// A search that adds nothing announces nothing.
	_, msgs = c.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`)
	if len(msgs) != 1 || msgs[0].ID != float64(3) {
		t.Fatalf("repeated search: %+v", msgs)
	}
	_, msgs = c.post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if !strings.Contains(string(msgs[0].Result), `"slugify"`) {
		t.Fatalf("tools/list: %s", msgs[0].Result)
	}
	// The capability is advertised although the SDK's own notifications are off.
	_, msgs = (&raw{t: t, url: url}).post(initBody)
	if !strings.Contains(string(msgs[0].Result), `"tools":{"listChanged":true}`) {
		t.Fatalf("initialize result: %s", msgs[0].Result)
	}
}

// TestListChangedGoClient: the Go SDK's client (which opens a GET stream)
// gets the notification once.
func TestListChangedGoClient(t *testing.T) {
	h := testHost(t, nil, "textkit")
	_, url := serveMCP(t, h, nil)
	changed := make(chan string, 8)
	cs, err := connect(t, url, changed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "url slug"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("no list_changed")
	}
	select {
	case <-changed:
		t.Fatal("list_changed twice")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestHTTPRefusals: what the SDK answers in plain text (or not at all)
// is answered in JSON-RPC form.
func TestHTTPRefusals(t *testing.T) {
	h := testHost(t, nil)
	_, url := serveMCP(t, h, &mcpserver.Options{Version: "v9.8.7"})
	c := &raw{t: t, url: url}
	// No session id, not initialize.
	resp, msgs := c.post(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if resp.StatusCode != 400 || len(msgs) != 1 || msgs[0].Error.Code != -32600 || msgs[0].ID != float64(5) {
		t.Fatalf("no session: %d %+v", resp.StatusCode, msgs)
	}
	resp, msgs = c.post(`{"jsonrpc":"2.0","id":`)
	if resp.StatusCode != 400 || len(msgs) != 1 || msgs[0].Error.Code != -32700 || msgs[0].ID != nil {
		t.Fatalf("bad JSON: %d %+v", resp.StatusCode, msgs)
	}
	resp, msgs = c.post(initBody)
	if !strings.Contains(string(msgs[0].Result), `"version":"v9.8.7"`) {
		t.Fatalf("serverInfo: %s", msgs[0].Result)
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, msgs = c.post(`{"jsonrpc":"2.0","id":"x","method":"no/such"}`)
	if resp.StatusCode != 200 || len(msgs) != 1 || msgs[0].Error.Code != -32601 || msgs[0].ID != "x" {
		t.Fatalf("unknown method: %d %+v", resp.StatusCode, msgs)
	}
	if resp, msgs := c.post(`{"jsonrpc":"2.0","method":"notifications/no_such"}`); resp.StatusCode != 202 || len(msgs) != 0 {
		t.Fatalf("unknown notification: %d %+v", resp.StatusCode, msgs)
	}
	resp, _ = c.post(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	if resp.StatusCode != 400 {
		t.Fatalf("batch: %d", resp.StatusCode)
	}
	// The session goes on.
	if resp, msgs := c.post(`{"jsonrpc":"2.0","id":6,"method":"ping"}`); resp.StatusCode != 200 || msgs[0].Error != nil {
		t.Fatalf("ping: %d %+v", resp.StatusCode, msgs)
	}
}

// TestHTTPCancelled: a call the client cancels gets no response; its
// handler sees the cancellation.
func TestHTTPCancelled(t *testing.T) {
	h := testHost(t, nil)
	_, url := serveMCP(t, h, nil)
	c := &raw{t: t, url: url}
	c.initialize(true)
	got := make(chan []rpcMsg, 1)
	// The call would wait 2 minutes: a stream that ended only when the
	// call finished misses the minute below (a deadline a machine ten
	// times slower meets, not a speed).
	go func() {
		_, msgs := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_ms","arguments":{"ms":120000}}}`)
		got <- msgs
	}()
	time.Sleep(200 * time.Millisecond)
	if resp, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`); resp.StatusCode != 202 {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	select {
	case msgs := <-got:
		for _, m := range msgs {
			if m.ID != nil {
				t.Fatalf("the cancelled call got a response: %+v", m)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call's stream did not end")
	}
	if resp, msgs := c.post(`{"jsonrpc":"2.0","id":8,"method":"ping"}`); resp.StatusCode != 200 || msgs[0].Error != nil {
		t.Fatalf("ping: %d %+v", resp.StatusCode, msgs)
	}
}

// stdio drives RunStdio over pipes, line by line.
type stdio struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
}

func startStdio(t *testing.T, h *host.Host) (*stdio, chan error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.New(h, nil).RunStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	t.Cleanup(func() { inW.Close() })
	return &stdio{t: t, in: inW, out: sc}, done
}

func (c *stdio) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *stdio) next() rpcMsg {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("no more output: %v", c.out.Err())
	}
	var m rpcMsg
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		c.t.Fatalf("line %q: %v", c.out.Text(), err)
	}
	return m
}

// TestStdioSurvivesBadInput: every malformed line gets a JSON-RPC error
// and the session goes on, its discoveries kept.
func TestStdioSurvivesBadInput(t *testing.T) {
	h := testHost(t, nil, "textkit")
	c, done := startStdio(t, h)
	c.send(initBody)
	if m := c.next(); m.ID != float64(1) || m.Error != nil {
		t.Fatalf("initialize: %+v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"url slug"}}}`)
	// list_changed comes before the result.
	if m := c.next(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("after tool_search: %+v", m)
	}
	if m := c.next(); m.ID != float64(2) || !strings.Contains(string(m.Result), "slugify") {
		t.Fatalf("tool_search result: %+v", m)
	}
	for _, bad := range []struct {
		line string
		code int64
		id   any
	}{
		{`{"jsonrpc":"2.0","id":3,"method":`, -32700, nil},
		{`not json at all`, -32700, nil},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, -32600, nil},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, float64(5)},
		{`{"id":6,"method":"ping"}`, -32600, float64(6)},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":7,"method":42}`, -32600, float64(7)},
		{`"a string"`, -32600, nil},
		{`{"jsonrpc":"2.0","id":8,"method":"no/such"}`, -32601, float64(8)},
	} {
		c.send(bad.line)
		m := c.next()
		if m.Error == nil || m.Error.Code != bad.code || m.ID != bad.id {
			t.Fatalf("%s: %+v (want code %d, id %v)", bad.line, m, bad.code, bad.id)
		}
	}
	// The next request is answered and the discovered tool is still there.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slugify","arguments":{"text":"Hello World"}}}`)
	if m := c.next(); m.ID != float64(9) || !strings.Contains(string(m.Result), "hello-world") {
		t.Fatalf("slugify: %+v", m)
	}
	c.in.Close()
	if err := <-done; err != nil {
		t.Fatalf("RunStdio: %v", err)
	}
}

// TestStdioCancelled: a cancelled call gets no response line.
func TestStdioCancelled(t *testing.T) {
	h := testHost(t, nil)
	c, _ := startStdio(t, h)
	c.send(initBody)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"wait_ms","arguments":{"ms":5000}}}`)
	time.Sleep(100 * time.Millisecond)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}`)
	time.Sleep(100 * time.Millisecond)
	c.send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	if m := c.next(); m.ID != float64(11) {
		t.Fatalf("first line after the cancel: %+v", m)
	}
}

// TestVersionDefault: without Options.Version, serverInfo.version is the
// build's version, never empty.
func TestVersionDefault(t *testing.T) {
	h := testHost(t, nil)
	_, url := serveMCP(t, h, nil)
	cs, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ServerInfo.Version; v == "" || v == "dev" {
		t.Fatalf("version %q", v)
	}
}

// TestToolsListMeta: tools/list carries titles, annotations and output
// schemas (the bundled manifests declare them).
func TestToolsListMeta(t *testing.T) {
	h := testHost(t, nil, "textkit")
	_, url := serveMCP(t, h, nil)
	cs, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "text statistics word count"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	ts := byName["textStats"]
	if ts == nil || ts.Title != "Text statistics" || ts.Annotations == nil || !ts.Annotations.ReadOnlyHint ||
		ts.Annotations.OpenWorldHint == nil || *ts.Annotations.OpenWorldHint || ts.OutputSchema == nil {
		t.Fatalf("textStats: %+v", ts)
	}
	if out, _ := json.Marshal(ts.OutputSchema); !strings.Contains(string(out), `"han"`) {
		t.Fatalf("textStats outputSchema: %s", out)
	}
	if s := byName["tool_search"]; s == nil || s.Title != "Tool search" || s.Annotations == nil || !s.Annotations.ReadOnlyHint {
		t.Fatalf("tool_search: %+v", s)
	}
	// The structured result conforms and is sent.
	call, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "textStats", Arguments: map[string]any{"text": "a b"}})
	if err != nil || call.IsError || call.StructuredContent == nil {
		t.Fatalf("textStats call: %+v %v", call, err)
	}
}

// chartHost is a host over the chart plugin, its artifacts in a store
// with the given retention.
func chartHost(t *testing.T, maxAge time.Duration) (*host.Host, *artifact.Store) {
	dir := t.TempDir()
	store := artifact.New(artifact.Options{MaxAge: maxAge, Dirs: []string{dir}})
	h := testHost(t, &wasm.Options{Artifacts: store, Grants: map[string]wasm.Grants{"chart": {Artifacts: dir}}}, "chart")
	return h, store
}

var barChart = map[string]any{"title": "Orders by city", "labels": []string{"Paris", "Lyon"},
	"series": []map[string]any{{"name": "orders", "values": []float64{120, 95}}}}

// TestChartAsContent: a chart reaches an MCP client as an embedded
// resource (SVG) in the call's result, readable again by its URI; too
// large to inline, as a resource link; past its retention, gone.
func TestChartAsContent(t *testing.T) {
	h, store := chartHost(t, time.Hour)
	_, url := serveMCP(t, h, &mcpserver.Options{Artifacts: store})
	cs, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cs.InitializeResult().Capabilities.Resources == nil {
		t.Fatal("no resources capability")
	}
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "bar chart"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createBarChart", Arguments: barChart})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("createBarChart: %+v %v", res, err)
	}
	er, ok := res.Content[1].(*mcp.EmbeddedResource)
	if !ok || er.Resource.MIMEType != "image/svg+xml" || !strings.Contains(er.Resource.Text, "<svg") ||
		!strings.Contains(er.Resource.Text, "Paris") || !strings.HasPrefix(er.Resource.URI, artifact.URIPrefix) {
		t.Fatalf("artifact content: %#v", res.Content[1])
	}
	if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "/") {
		t.Fatalf("the text shows a server path: %q", text)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: er.Resource.URI})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != er.Resource.Text {
		t.Fatalf("resources/read: %+v %v", read, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: artifact.URIPrefix + "0123456789abcdef0123456789abcdef-x.svg"}); err == nil {
		t.Fatal("an unknown artifact was read")
	}

	// Over the inline size: a link the client reads.
	_, url = serveMCP(t, h, &mcpserver.Options{Artifacts: store, InlineBytes: -1})
	cs, err = connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "bar chart"}})
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "createBarChart", Arguments: barChart})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("createBarChart: %+v %v", res, err)
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok || link.MIMEType != "image/svg+xml" || link.Size == nil || *link.Size == 0 {
		t.Fatalf("link: %#v", res.Content[1])
	}
	if read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI}); err != nil || !strings.Contains(read.Contents[0].Text, "<svg") {
		t.Fatalf("read the link: %v", err)
	}
}

// TestArtifactRetention: an artifact past its retention cannot be read,
// and the sweep removes its file.
func TestArtifactRetention(t *testing.T) {
	h, store := chartHost(t, 2*time.Second)
	_, url := serveMCP(t, h, &mcpserver.Options{Artifacts: store})
	cs, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "bar chart"}})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createBarChart", Arguments: barChart})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	uri := res.Content[1].(*mcp.EmbeddedResource).Resource.URI
	a, err := store.Get(strings.TrimPrefix(uri, artifact.URIPrefix))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2200 * time.Millisecond)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Fatal("an artifact past its retention was read")
	}
	if n, err := store.Sweep(); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
}

// TestDispatcher: with the dispatcher on, a client that never refreshes
// its list reaches found tools through call_tool, and only those.
func TestDispatcher(t *testing.T) {
	h := testHost(t, nil, "textkit", "calculate")
	_, url := serveMCP(t, h, &mcpserver.Options{Dispatcher: true})
	cs, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tl := range list.Tools {
		listed = append(listed, tl.Name)
	}
	if strings.Join(listed, " ") != "call_tool tool_search wait_ms" {
		t.Fatalf("list %v", listed)
	}
	call := func(name string, args any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": args}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if text, isErr := call("slugify", map[string]any{"text": "A B"}); !isErr || !strings.Contains(text, "tool_search first") {
		t.Fatalf("before search: %q %v", text, isErr)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "url slug"}}); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call("slugify", map[string]any{"text": "Hello World"}); isErr || text != "hello-world" {
		t.Fatalf("found tool: %q %v", text, isErr)
	}
	if text, isErr := call("slugify", map[string]any{"nope": 1}); !isErr || !strings.Contains(text, "schema") {
		t.Fatalf("bad arguments: %q %v", text, isErr)
	}
	// In the catalog, not found by this session: refused.
	if text, isErr := call("calculate", map[string]any{"expression": "1+1"}); !isErr || !strings.Contains(text, `"calculate" is not one (found: slugify`) {
		t.Fatalf("not found: %q %v", text, isErr)
	}
	for _, name := range []string{"tool_search", "call_tool", "wait_ms"} {
		if _, isErr := call(name, map[string]any{}); !isErr {
			t.Fatalf("call_tool %s was run", name)
		}
	}
	// Off by default.
	_, url = serveMCP(t, h, nil)
	cs2, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := cs2.ListTools(ctx, nil); len(list.Tools) != 2 {
		t.Fatalf("dispatcher off: %d tools", len(list.Tools))
	}
}

// TestEviction: when full, a new client takes the slot of the session
// idle longest (past EvictAfter), never of one with a request in
// progress, nor of one idle for less.
func TestEviction(t *testing.T) {
	h := testHost(t, nil)
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 2, EvictAfter: time.Second})
	old, busy := &raw{t: t, url: url}, &raw{t: t, url: url}
	old.initialize(true)
	busy.initialize(true)
	done := make(chan []rpcMsg, 1)
	go func() {
		_, msgs := busy.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_ms","arguments":{"ms":2500}}}`)
		done <- msgs
	}()
	// Both fresh: refused.
	if resp, _ := (&raw{t: t, url: url}).post(initBody); resp.StatusCode != 503 {
		t.Fatalf("while both are fresh: %d", resp.StatusCode)
	}
	time.Sleep(1300 * time.Millisecond)
	newer := &raw{t: t, url: url}
	newer.initialize(true)
	if resp, _ := old.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != 404 {
		t.Fatalf("the idle session after eviction: %d", resp.StatusCode)
	}
	// One busy, one fresh: refused.
	if resp, _ := (&raw{t: t, url: url}).post(initBody); resp.StatusCode != 503 {
		t.Fatalf("with one busy and one fresh: %d", resp.StatusCode)
	}
	if msgs := <-done; len(msgs) != 1 || msgs[0].Error != nil {
		t.Fatalf("the busy session's call: %+v", msgs)
	}
	if resp, _ := busy.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); resp.StatusCode != 200 {
		t.Fatalf("the busy session: %d", resp.StatusCode)
	}
	if s.Sessions() != 2 {
		t.Fatalf("%d sessions", s.Sessions())
	}
}

// TestUninitializedFlood: 300 clients that stop after initialize get at
// most the limit of sessions, and hold nothing once InitTimeout has
// passed: slots and goroutines come back.
func TestUninitializedFlood(t *testing.T) {
	h := testHost(t, nil)
	// InitTimeout outlasts the burst, even on a loaded machine, so that
	// no slot frees up during it.
	s, url := serveMCP(t, h, &mcpserver.Options{MaxSessions: 100, InitTimeout: 3 * time.Second})
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 300 {
		wg.Go(func() {
			resp, _ := (&raw{t: t, url: url}).post(initBody)
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[200] != 100 || codes[503] != 200 {
		t.Fatalf("status codes %v, want 100 admitted and 200 refused", codes)
	}
	waitFor(t, "the sessions to be dropped", func() bool { return s.Sessions() == 0 })
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before+10 })
	// The slots are free again.
	if _, err := connect(t, url, nil); err != nil {
		t.Fatal(err)
	}
}
