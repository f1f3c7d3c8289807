package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// allClient grants every client feature.
var allClient = wasm.Grants{Client: []string{"log", "progress", "sample", "elicit"}}

// clientHost is a host over the clientkit test plugin (testdata/clientkit:
// each tool repeats one client.* operation and reports the host's
// answers) with the given grants.
func clientHost(t *testing.T, g wasm.Grants) *host.Host {
	t.Helper()
	return pluginHost(t, "testdata/clientkit", "testdata/clientkit/clientkit.json", g, nil)
}

// pluginHost is a host over the plugin built from pkg with manifest,
// granted g, storing artifacts in store (nil: none); its tools are found
// without tool_search (agent.auto_discover), as the conformance suite
// calls them.
func pluginHost(t *testing.T, pkg, manifest string, g wasm.Grants, store *artifact.Store) *host.Host {
	t.Helper()
	dir, name := plugintest.Pin(t, wasmbuild.Build(t, pkg), manifest)
	snap, err := catalog.Load(dir, nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	wo := &wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache"), Grants: map[string]wasm.Grants{name: g}}
	if store != nil {
		wo.Artifacts = store
	}
	rt, err := wasm.New(wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	h, err := host.New(host.Options{Client: openai.NewClientWithConfig(openai.DefaultConfig("")), Model: "none",
		Catalog: func() *catalog.Snapshot { return snap }, Runtime: rt, Search: host.SearchOptions{Mode: host.ModeKeyword},
		AutoDiscover: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// heard is what a client received: log messages and progress values.
type heard struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	tokens   []any
}

func (h *heard) counts() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.logs), len(h.progress)
}

// clientOpts is a go-sdk client's options that record notifications in
// h; sample and elicit, when set, answer sampling and elicitation (and
// make the client declare them).
func clientOpts(h *heard, sample func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error),
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			h.mu.Lock()
			defer h.mu.Unlock()
			s, _ := r.Params.Data.(string)
			h.logs = append(h.logs, string(r.Params.Level)+":"+s)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.progress = append(h.progress, r.Params.Progress)
			h.tokens = append(h.tokens, r.Params.ProgressToken)
		},
		CreateMessageHandler: sample,
		ElicitationHandler:   elicit,
	}
}

// connectHTTP connects a go-sdk client with opts to an MCP server of h
// over streamable HTTP.
func connectHTTP(t *testing.T, h *host.Host, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	_, url := serveMCP(t, h, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectStdio connects a go-sdk client with opts to toolshed mcp's
// stdio server of h.
func connectStdio(t *testing.T, h *host.Host, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		mcpserver.New(h, nil).RunStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); inW.Close() })
	return cs
}

// report is clientkit's result: the operations that succeeded, their
// replies, the error that stopped them.
type report struct {
	OK      int               `json:"ok"`
	Replies []json.RawMessage `json:"replies"`
	Error   string            `json:"error"`
}

// callKit calls a clientkit tool (with a progress token when token is
// set) and decodes its report.
func callKit(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, token any) report {
	t.Helper()
	r, err := tryKit(cs, tool, args, token)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryKit is callKit for any goroutine: it returns what went wrong.
func tryKit(cs *mcp.ClientSession, tool string, args map[string]any, token any) (report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != nil {
		p.Meta = mcp.Meta{"progressToken": token}
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		return report{}, fmt.Errorf("%s: %v", tool, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var r report
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return report{}, fmt.Errorf("%s: not a report (is_error %v): %s", tool, res.IsError, text)
	}
	return r, nil
}

func setLevel(t *testing.T, cs *mcp.ClientSession, level mcp.LoggingLevel) {
	t.Helper()
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		t.Fatal(err)
	}
}

// TestClientLogAndProgress: a plugin's log messages reach the client as
// notifications/message at or above the level it set, and its progress
// as notifications/progress with the call's token, over HTTP and stdio;
// without a token, progress is not sent and the plugin is told so.
func TestClientLogAndProgress(t *testing.T) {
	h := clientHost(t, allClient)
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			var got heard
			opts := clientOpts(&got, nil, nil)
			connect := connectHTTP
			if transport == "stdio" {
				connect = connectStdio
			}
			c := connect(t, h, opts)
			setLevel(t, c, "warning")
			if r := callKit(t, c, "clientLog", map[string]any{"level": "info", "message": "quiet"}, nil); r.OK != 1 || r.Error != "" {
				t.Fatalf("info: %+v", r)
			}
			if r := callKit(t, c, "clientLog", map[string]any{"level": "error", "message": "loud", "times": 3}, nil); r.OK != 3 {
				t.Fatalf("error: %+v", r)
			}
			waitFor(t, "3 log messages", func() bool { n, _ := got.counts(); return n >= 3 })
			r := callKit(t, c, "clientProgress", map[string]any{"values": []float64{0, 50, 100}}, "tok-1")
			if r.OK != 3 || string(r.Replies[0]) != "true" {
				t.Fatalf("progress: %+v", r)
			}
			waitFor(t, "3 progress notifications", func() bool { _, n := got.counts(); return n >= 3 })
			r = callKit(t, c, "clientProgress", map[string]any{"values": []float64{10}}, nil)
			if r.OK != 1 || string(r.Replies[0]) != "false" {
				t.Fatalf("progress without a token: %+v", r)
			}
			time.Sleep(50 * time.Millisecond) // anything late would land now
			got.mu.Lock()
			defer got.mu.Unlock()
			if strings.Join(got.logs, ",") != "error:loud,error:loud,error:loud" {
				t.Errorf("logs: %q (info is below the client's level, warning)", got.logs)
			}
			if len(got.progress) != 3 || got.progress[1] != 50 || got.tokens[2] != "tok-1" {
				t.Errorf("progress: %v %v", got.progress, got.tokens)
			}
		})
	}
}

// TestClientSampleAndElicit: a plugin asks the client's model and its user
// and gets their answers, over HTTP and stdio; the elicited form's
// defaults are applied to what the user left out.
func TestClientSampleAndElicit(t *testing.T) {
	h := clientHost(t, allClient)
	t.Run("http", func(t *testing.T) { sampleAndElicit(t, h, connectHTTP) })
	t.Run("stdio", func(t *testing.T) { sampleAndElicit(t, h, connectStdio) })
}

func sampleAndElicit(t *testing.T, h *host.Host, connect func(*testing.T, *host.Host, *mcp.ClientOptions) *mcp.ClientSession) {
	var prompts []string
	var mu sync.Mutex
	sample := func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		prompts = append(prompts, r.Params.Messages[0].Content.(*mcp.TextContent).Text)
		mu.Unlock()
		return &mcp.CreateMessageResult{Role: "assistant", Model: "client-model", Content: &mcp.TextContent{Text: "forty-two"}}, nil
	}
	elicit := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if r.Params.Message != "Your name?" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}
	c := connect(t, h, clientOpts(&heard{}, sample, elicit))
	r := callKit(t, c, "clientSample", map[string]any{"prompt": "the answer?", "times": 2}, nil)
	if r.OK != 2 || !strings.Contains(string(r.Replies[0]), `"text":"forty-two"`) || !strings.Contains(string(r.Replies[1]), `"model":"client-model"`) {
		t.Fatalf("sample: %+v", r)
	}
	if len(prompts) != 2 || prompts[0] != "the answer?" {
		t.Fatalf("the client got %q", prompts)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name":  map[string]any{"type": "string"},
		"tier":  map[string]any{"type": "string", "enum": []string{"free", "pro"}, "default": "free"},
		"seats": map[string]any{"type": "integer", "default": 3}}, "required": []string{"name"}}
	r = callKit(t, c, "clientElicit", map[string]any{"message": "Your name?", "schema": schema}, nil)
	if r.OK != 1 || r.Error != "" {
		t.Fatalf("elicit: %+v", r)
	}
	var reply struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	json.Unmarshal(r.Replies[0], &reply)
	if reply.Action != "accept" || reply.Content["name"] != "Ada" || reply.Content["tier"] != "free" || reply.Content["seats"] != float64(3) {
		t.Fatalf("elicit reply: %s", r.Replies[0])
	}
	r = callKit(t, c, "clientElicit", map[string]any{"message": "Something else", "schema": schema}, nil)
	if r.OK != 1 || !strings.Contains(string(r.Replies[0]), `"action":"decline"`) || strings.Contains(string(r.Replies[0]), "content") {
		t.Fatalf("declined: %+v", r)
	}
}

// TestClientRefused: each feature the operator did not grant is refused
// with an error naming it, and nothing reaches the client; a granted
// feature the client does not offer (no sampling or elicitation handler)
// is refused naming the client; a call that no MCP client made (the chat
// completions path) is told there is no client.
func TestClientRefused(t *testing.T) {
	var got heard
	var asked bool
	sample := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		asked = true
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "x"}}, nil
	}
	c := connectHTTP(t, clientHost(t, wasm.Grants{}), clientOpts(&got, sample, nil))
	setLevel(t, c, "debug")
	for tool, args := range map[string]map[string]any{
		"clientLog":      {"level": "info", "message": "m"},
		"clientProgress": {"values": []float64{1}},
		"clientSample":   {"prompt": "p"},
		"clientElicit":   {"message": "m", "schema": map[string]any{"type": "object"}},
	} {
		r := callKit(t, c, tool, args, "tok")
		if r.OK != 0 || !strings.Contains(r.Error, "is not granted to this plugin") {
			t.Errorf("%s without the grant: %+v", tool, r)
		}
	}
	if n, p := got.counts(); n+p > 0 || asked {
		t.Errorf("the client heard from a plugin without grants: %d logs, %d progress, sampled %v", n, p, asked)
	}

	h := clientHost(t, allClient)
	c = connectHTTP(t, h, clientOpts(&got, nil, nil)) // no sampling, no elicitation
	r := callKit(t, c, "clientSample", map[string]any{"prompt": "p"}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, `the MCP client (test 1) does not offer sampling`) {
		t.Errorf("sampling a client without it: %+v", r)
	}
	r = callKit(t, c, "clientElicit", map[string]any{"message": "m", "schema": map[string]any{"type": "object"}}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, `does not offer elicitation`) {
		t.Errorf("eliciting from a client without it: %+v", r)
	}

	// The chat completions path: host.Session.Call with no client bound.
	s := h.NewSession()
	defer s.Close()
	res, _ := s.Call(context.Background(), "clientLog", `{"level":"info","message":"m"}`)
	if !strings.Contains(res.Content, "did not come from an MCP client") {
		t.Errorf("no MCP client: %s", res.Content)
	}
}

// TestClientHostile: a plugin that floods the client is stopped by the
// quota (exactly MaxClientNotifications reach the client), oversized
// messages and malformed requests are refused before anything is sent,
// and the requests per call are bounded; the session serves the next
// call normally.
func TestClientHostile(t *testing.T) {
	var got heard
	var mu sync.Mutex
	samples := 0
	sample := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		samples++
		mu.Unlock()
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "ok"}}, nil
	}
	c := connectHTTP(t, clientHost(t, allClient), clientOpts(&got, sample, nil))
	setLevel(t, c, "debug")

	r := callKit(t, c, "clientLog", map[string]any{"level": "info", "message": "flood", "times": 100000}, nil)
	if r.OK != wasm.MaxClientNotifications || !strings.Contains(r.Error, "quota exceeded") {
		t.Fatalf("flood: %d sent, %q", r.OK, r.Error)
	}
	waitFor(t, "the flood's messages", func() bool { n, _ := got.counts(); return n >= wasm.MaxClientNotifications })
	time.Sleep(50 * time.Millisecond)
	if n, _ := got.counts(); n != wasm.MaxClientNotifications {
		t.Fatalf("the client got %d messages; the quota is %d", n, wasm.MaxClientNotifications)
	}

	r = callKit(t, c, "clientLog", map[string]any{"level": "info", "pad": wasm.MaxClientNotificationBytes + 1}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, "at most 8192") {
		t.Errorf("oversized: %+v", r)
	}
	r = callKit(t, c, "clientLog", map[string]any{"level": "loud", "message": "m"}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, `level "loud" is not one of debug`) {
		t.Errorf("bad level: %+v", r)
	}
	r = callKit(t, c, "clientProgress", map[string]any{"values": []float64{10, 20, 15}}, "tok")
	if r.OK != 2 || !strings.Contains(r.Error, "progress must increase") {
		t.Errorf("progress going back: %+v", r)
	}
	r = callKit(t, c, "clientSample", map[string]any{"prompt": "p", "times": 50}, nil)
	if r.OK != wasm.MaxClientRequests || !strings.Contains(r.Error, "quota exceeded") || samples != wasm.MaxClientRequests {
		t.Errorf("50 samplings in a call: %d answered, client asked %d times, %q", r.OK, samples, r.Error)
	}
	r = callKit(t, c, "clientSample", map[string]any{"prompt": strings.Repeat("p", wasm.MaxClientRequestBytes+1)}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, "at most 65536") {
		t.Errorf("oversized sampling: %+v", r)
	}
	r = callKit(t, c, "clientSample", map[string]any{"prompt": "p", "max_tokens": 1 << 30}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, "max_tokens") {
		t.Errorf("max_tokens: %+v", r)
	}
	nested := map[string]any{"type": "object", "properties": map[string]any{
		"address": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	r = callKit(t, c, "clientElicit", map[string]any{"message": "m", "schema": nested}, nil)
	if r.OK != 0 || !strings.Contains(r.Error, `property "address"`) {
		t.Errorf("nested schema: %+v", r)
	}
	if samples != wasm.MaxClientRequests {
		t.Errorf("refused requests reached the client: %d samplings", samples)
	}
	if r := callKit(t, c, "clientLog", map[string]any{"level": "info", "message": "after"}, nil); r.OK != 1 {
		t.Errorf("the next call: %+v", r)
	}
}

// TestClientElicitNeverAnswered: a client that never answers an
// elicitation holds the call only until the plugin's deadline
// (timeout_ms); the call fails saying so, and the session's next calls
// are served.
func TestClientElicitNeverAnswered(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	elicit := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, context.Canceled
	}
	var got heard
	c := connectHTTP(t, clientHost(t, allClient), clientOpts(&got, nil, elicit))
	setLevel(t, c, "debug")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "clientElicit",
		Arguments: map[string]any{"message": "m", "schema": map[string]any{"type": "object"}}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "timed out") && !strings.Contains(text, "deadline") {
		t.Fatalf("an unanswered elicitation: %v %s", res.IsError, text)
	}
	for i := range 3 {
		if r := callKit(t, c, "clientLog", map[string]any{"level": "info", "message": "next"}, nil); r.OK != 1 {
			t.Fatalf("call %d after: %+v", i, r)
		}
	}
}

// TestClientHostileAnswers: what a client answers is checked before it
// reaches the plugin: an oversized sampling answer, a refusal, a form that
// does not match the schema asked for, a non-text answer each come back
// as the op's error; a call cancelled while its elicitation waits ends at
// once and the session goes on.
func TestClientHostileAnswers(t *testing.T) {
	sample := func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		switch r.Params.Messages[0].Content.(*mcp.TextContent).Text {
		case "big":
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: strings.Repeat("x", wasm.MaxClientReplyBytes+1)}}, nil
		case "image":
			return &mcp.CreateMessageResult{Content: &mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}, nil
		}
		return nil, &jsonrpcError{"the user refused the request"}
	}
	asked := make(chan struct{}, 1)
	release := make(chan struct{}) // the client's handler is not told of the cancel: it waits for the test's end
	defer close(release)
	elicit := func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if r.Params.Message == "wait" {
			asked <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, context.Canceled
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": 5}}, nil
	}
	c := connectHTTP(t, clientHost(t, allClient), clientOpts(&heard{}, sample, elicit))
	for prompt, want := range map[string]string{
		"big":   "the client's answer is 262145 bytes; at most 262144",
		"image": "answered with image content; only text reaches a plugin",
		"no":    "the user refused the request",
	} {
		if r := callKit(t, c, "clientSample", map[string]any{"prompt": prompt}, nil); r.OK != 0 || !strings.Contains(r.Error, want) {
			t.Errorf("sampling answered %q: %+v", prompt, r)
		}
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	if r := callKit(t, c, "clientElicit", map[string]any{"message": "m", "schema": schema}, nil); r.OK != 0 ||
		!strings.Contains(r.Error, "does not match requested schema") {
		t.Errorf("a form that does not match: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "clientElicit", Arguments: map[string]any{"message": "wait", "schema": schema}})
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the elicitation never reached the client")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call did not end")
	}
	if r := callKit(t, c, "clientLog", map[string]any{"level": "info", "message": "after"}, nil); r.OK != 1 {
		t.Fatalf("the call after a cancelled elicitation: %+v", r)
	}
}

// jsonrpcError is a client handler's error, as the SDK sends it back.
type jsonrpcError struct{ msg string }

func (e *jsonrpcError) Error() string { return e.msg }

// TestConformanceFixtures: the conformance suite's fixture plugin
// (conformance/fixtures) answers as each tools and elicitation scenario
// expects, through the go-sdk client: what make conformance checks with
// the suite, here without npm.
func TestConformanceFixtures(t *testing.T) {
	dir := t.TempDir()
	store := artifact.New(artifact.Options{MaxAge: time.Hour, Dirs: []string{dir}})
	h := pluginHost(t, "conformance/fixtures", "conformance/fixtures/conformance.json",
		wasm.Grants{Artifacts: dir, Client: allClient.Client}, store)
	var schemas []map[string]any
	var mu sync.Mutex
	elicit := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		s, _ := json.Marshal(r.Params.RequestedSchema)
		var m map[string]any
		json.Unmarshal(s, &m)
		schemas = append(schemas, m)
		if len(schemas) == 1 {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "testuser", "email": "test@example.com"}}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
	sample := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "This is a test response from the client"}}, nil
	}
	var got heard
	_, url := serveMCP(t, h, &mcpserver.Options{Artifacts: store})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, clientOpts(&got, sample, elicit)).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	setLevel(t, c, "debug")
	call := func(name string, args map[string]any, token any) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if token != nil {
			p.Meta = mcp.Meta{"progressToken": token}
		}
		res, err := c.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res.Content[0])
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

	res := call("test_audio_content", nil, nil)
	if len(res.Content) != 2 {
		t.Fatalf("audio: %d blocks", len(res.Content))
	}
	if a, ok := res.Content[1].(*mcp.AudioContent); !ok || a.MIMEType != "audio/wav" || string(a.Data[:4]) != "RIFF" {
		t.Fatalf("audio: %T %+v", res.Content[1], res.Content[1])
	}
	call("test_tool_with_logging", nil, nil)
	res = call("test_tool_with_progress", nil, "progress-test-1")
	if !strings.Contains(text(res), "3 progress notifications sent") {
		t.Fatalf("progress: %s", text(res))
	}
	waitFor(t, "3 logs and 3 progress notifications", func() bool { l, p := got.counts(); return l >= 3 && p >= 3 })
	got.mu.Lock()
	if strings.Join(got.logs, "|") != "info:Tool execution started|info:Tool processing data|info:Tool execution completed" ||
		got.progress[0] != 0 || got.progress[1] != 50 || got.progress[2] != 100 {
		t.Errorf("logs %q, progress %v", got.logs, got.progress)
	}
	got.mu.Unlock()
	if res := call("test_sampling", map[string]any{"prompt": "Test prompt for sampling"}, nil); text(res) != "LLM response: This is a test response from the client" {
		t.Errorf("sampling: %s", text(res))
	}
	if res := call("test_elicitation", map[string]any{"message": "Please provide your information"}, nil); text(res) !=
		`User response: action=accept, content={"email":"test@example.com","username":"testuser"}` {
		t.Errorf("elicitation: %s", text(res))
	}
	res = call("test_elicitation_sep1034_defaults", nil, nil)
	if want := `Elicitation completed: action=accept, content={"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`; text(res) != want {
		t.Errorf("SEP-1034: %s\nwant %s", text(res), want)
	}
	call("test_elicitation_sep1330_enums", nil, nil)
	mu.Lock()
	defer mu.Unlock()
	if len(schemas) != 3 {
		t.Fatalf("%d elicitations", len(schemas))
	}
	props := schemas[2]["properties"].(map[string]any)
	titled := props["titledSingle"].(map[string]any)["oneOf"].([]any)
	multi := props["titledMulti"].(map[string]any)["items"].(map[string]any)["anyOf"].([]any)
	legacy := props["legacyEnum"].(map[string]any)["enumNames"].([]any)
	if len(props) != 5 || len(titled) != 3 || len(multi) != 3 || len(legacy) != 3 {
		t.Errorf("SEP-1330 schema: %v", props)
	}
}

// TestClientConcurrentCalls: calls of several sessions at once, each
// flooding its client, each stopped at its own call's quota: every client
// receives exactly its calls' share, nothing of another session's.
func TestClientConcurrentCalls(t *testing.T) {
	h := clientHost(t, allClient)
	const sessions, calls = 4, 3
	var wg sync.WaitGroup
	got := make([]heard, sessions)
	clients := make([]*mcp.ClientSession, sessions)
	for i := range sessions {
		clients[i] = connectHTTP(t, h, clientOpts(&got[i], nil, nil))
		setLevel(t, clients[i], "debug")
	}
	errs := make(chan string, sessions*calls)
	for i := range sessions {
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := tryKit(clients[i], "clientLog", map[string]any{"level": "info", "message": fmt.Sprint("s", i), "times": 1000}, nil)
				if err != nil || r.OK != wasm.MaxClientNotifications {
					errs <- fmt.Sprintf("session %d: %+v %v", i, r, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i := range sessions {
		waitFor(t, "the messages", func() bool { n, _ := got[i].counts(); return n >= calls*wasm.MaxClientNotifications })
	}
	time.Sleep(50 * time.Millisecond)
	for i := range sessions {
		got[i].mu.Lock()
		n := len(got[i].logs)
		for _, l := range got[i].logs {
			if l != fmt.Sprintf("info:s%d", i) {
				t.Errorf("session %d got %q", i, l)
				break
			}
		}
		got[i].mu.Unlock()
		if n != calls*wasm.MaxClientNotifications {
			t.Errorf("session %d: %d messages, want %d", i, n, calls*wasm.MaxClientNotifications)
		}
	}
}

// TestClientNameCut: what a client says its name is reaches a plugin's
// error message on one line and cut to 64 characters.
func TestClientNameCut(t *testing.T) {
	_, url := serveMCP(t, clientHost(t, allClient), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "evil\nclient " + strings.Repeat("名", 5000)
	c, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := callKit(t, c, "clientSample", map[string]any{"prompt": "p"}, nil)
	if !strings.Contains(r.Error, "the MCP client (evil client 名名") || !strings.Contains(r.Error, "名…) does not offer sampling") ||
		strings.Contains(r.Error, "\n") || len(r.Error) > 400 {
		t.Fatalf("%q", r.Error)
	}
}
