package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// testCacheDir is the compilation cache the tests of this package share,
// so each test binary compiles a plugin once (slow under the race
// detector).
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolshed-test-cache-")
	if err != nil {
		panic(err)
	}
	testCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// served is toolshed serve on 127.0.0.1 over the textkit plugin, with the
// scripted model as its upstream, also on 127.0.0.1.
type served struct {
	url    string
	model  *scripted.Model
	server *server
	logs   *bytes.Buffer
}

func startServe(t testing.TB, model *scripted.Model, flags map[string]string) *served {
	t.Helper()
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	up := httptest.NewServer(model)
	t.Cleanup(up.Close)
	all := map[string]string{"model.base_url": up.URL + "/v1", "model.name": "scripted", "plugins.dir": dir,
		"plugins.cache_dir": testCacheDir, "agent.time": "false", "agent.todo": "false", "model.retries": "0",
		"limits.compile_timeout": "3m"} // a loaded machine, or the race detector, compiles slowly
	for k, v := range flags {
		all[k] = v
	}
	l, err := config.Load(config.Source{Flags: all})
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := newServer(&l.Config, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.routes())
	t.Cleanup(func() { srv.Close(); s.close() })
	return &served{url: srv.URL, model: model, server: s, logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// client is an ordinary OpenAI client pointed at Toolshed.
func (s *served) client(key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.url + "/v1"
	return openai.NewClientWithConfig(cfg)
}

func user(text string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: "user", Content: text}}
}

// TestChatCompletionsEndToEnd: an OpenAI client asks Toolshed; the agent
// searches, discovers textkit's slugify, runs the plugin and answers, plain
// and streamed.
func TestChatCompletionsEndToEnd(t *testing.T) {
	s := startServe(t, &scripted.Model{}, nil)
	c := s.client("")
	ctx := context.Background()
	ask := `use slugify with {"text":"Tool_Search"} to url-slug`
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "scripted", Messages: user(ask)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "answer: tool-search" ||
		resp.Choices[0].FinishReason != "stop" || resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") ||
		resp.Usage.TotalTokens == 0 || resp.Model != "scripted" {
		t.Fatalf("response %+v", resp)
	}
	// The upstream saw tool_search alone first, slugify from round 2 on.
	sent := s.model.ToolsSent()
	if !reflect.DeepEqual(sent, [][]string{{"tool_search"}, {"tool_search", "slugify"}, {"tool_search", "slugify"}}) {
		t.Fatalf("tools sent %v", sent)
	}

	// Streamed: the same answer in chunks, then stop and the usage.
	st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Messages: user(ask), Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var finish openai.FinishReason
	var usage *openai.Usage
	chunks := 0
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		if ch.Object != "chat.completion.chunk" || (chunks == 1 && (len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant")) {
			t.Fatalf("chunk %d: %+v", chunks, ch)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	st.Close()
	if text.String() != "answer: tool-search" || finish != "stop" || usage == nil || usage.TotalTokens == 0 || chunks < 4 {
		t.Fatalf("stream: %q finish %q usage %+v chunks %d", text.String(), finish, usage, chunks)
	}
}

// TestChatCompletionsClientTools: tools the client sends come back as
// tool calls, plain and streamed, and its results finish the answer.
func TestChatCompletionsClientTools(t *testing.T) {
	s := startServe(t, &scripted.Model{}, nil)
	c := s.client("")
	ctx := context.Background()
	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "get_location",
		Description: "The user's city", Parameters: json.RawMessage(`{"type":"object","properties":{"precise":{"type":"boolean"}}}`)}}}
	ask := user(`use get_location with {"precise":true} to where`)
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Messages: ask, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_location" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"precise":true}` || ch.Message.ToolCalls[0].ID == "" {
		t.Fatalf("choice %+v", ch)
	}
	// The client runs it and sends the result back.
	msgs := append(ask, ch.Message, openai.ChatCompletionMessage{Role: "tool", ToolCallID: ch.Message.ToolCalls[0].ID, Name: "get_location", Content: "Lyon"})
	resp, err = c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Messages: msgs, Tools: tools})
	if err != nil || resp.Choices[0].Message.Content != "answer: Lyon" {
		t.Fatalf("%+v %v", resp, err)
	}
	// Streamed: the call arrives as a tool_calls delta.
	st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Messages: ask, Tools: tools, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var calls []openai.ToolCall
	var finish openai.FinishReason
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			calls = append(calls, c.Delta.ToolCalls...)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if finish != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_location" || calls[0].Index == nil {
		t.Fatalf("stream calls %+v finish %q", calls, finish)
	}
}

// TestChatCompletionsIsolated: two requests at once discover different
// tools; neither sees the other's.
func TestChatCompletionsIsolated(t *testing.T) {
	s := startServe(t, &scripted.Model{Delay: 20 * time.Millisecond}, nil)
	c := s.client("")
	asks := map[string]string{
		"slugify":   `use slugify with {"text":"A_B"} to url-slug`,
		"textStats": `use textStats with {"text":"a b"} to count-words`,
	}
	var wg sync.WaitGroup
	for tool, ask := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: user(ask)})
				if err != nil || !strings.HasPrefix(resp.Choices[0].Message.Content, "answer:") {
					t.Errorf("%s: %+v %v", tool, resp, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, req := range s.model.Requests() {
		var u string
		for _, m := range req.Messages {
			if m.Role == "user" {
				u = m.Content
			}
		}
		names := scripted.ToolNames(req)
		for tool, ask := range asks {
			if u != ask && slices.Contains(names, tool) {
				t.Fatalf("a request for %q was sent %s, which another request discovered: %v", u, tool, names)
			}
		}
	}
}

func postJSON(t *testing.T, url, key, body string) (*http.Response, string) {
	t.Helper()
	return send(t, "POST", url, key, body)
}

// send makes a request with a JSON body and the key as a bearer token
// (none when empty), and returns the response and its body.
func send(t *testing.T, method, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServeRefusesBadInput: every refusal is an OpenAI-shaped error with
// a message that says what to fix, and the server keeps serving.
func TestServeRefusesBadInput(t *testing.T) {
	s := startServe(t, &scripted.Model{}, map[string]string{"server.max_body_bytes": "2048"})
	url := s.url + "/v1/chat/completions"
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"messages": [`, 400, "not a chat completion request"},
		{`{"messages": []}`, 400, "messages is empty"},
		{`{"messages": [{"role":"user","content":"x"}], "tools": [{"type":"function","function":{"name":"tool_search"}}]}`, 400, "server tool"},
		{`{"messages": [{"role":"user","content":"x"}], "tool_choice": "required"}`, 400, "tool_choice"},
		{`{"messages": [{"role":"user","content":"` + strings.Repeat("x", 4000) + `"}]}`, 413, "server.max_body_bytes"},
	} {
		resp, body := postJSON(t, url, "", tc.body)
		var e struct {
			Error struct{ Message, Type string }
		}
		json.Unmarshal([]byte(body), &e)
		if resp.StatusCode != tc.status || !strings.Contains(e.Error.Message, tc.want) || e.Error.Type == "" {
			t.Errorf("%.60s: %d %s", tc.body, resp.StatusCode, body)
		}
	}
	// A dead upstream is a 502 that names it.
	s.model.Cut = true
	resp, body := postJSON(t, url, "", `{"messages":[{"role":"user","content":"use slugify with {} to x"}],"stream":true}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"error"`) || strings.Contains(body, "[DONE]") {
		t.Errorf("cut stream: %d %s", resp.StatusCode, body)
	}
	resp, _ = postJSON(t, url, "", `{"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Errorf("after the errors: %d", resp.StatusCode)
	}
}

func TestServeModelsAuthAndMetrics(t *testing.T) {
	const key = "test-key-0123456789abcdef"
	s := startServe(t, &scripted.Model{}, map[string]string{"server.api_keys": key})
	// Every endpoint but the probes (TestServeReadyz) wants the key.
	for _, path := range []string{"/v1/models", "/v1/plugins", "/metrics", "/mcp"} {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s without a key: %d", path, resp.StatusCode)
		}
	}
	if _, err := s.client("wrong-key-0123456789").ListModels(context.Background()); err == nil {
		t.Error("a wrong key was let in")
	}
	models, err := s.client(key).ListModels(context.Background())
	if err != nil || len(models.Models) != 2 || models.Models[0].ID != "scripted" {
		t.Fatalf("models %+v %v", models, err)
	}
	resp, err := s.client(key).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Messages: user(`use slugify with {"text":"A_B"} to url-slug`)})
	if err != nil || resp.Choices[0].Message.Content != "answer: a-b" {
		t.Fatalf("%+v %v", resp, err)
	}
	req, _ := http.NewRequest("GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`toolshed_http_requests_total{code="200",endpoint="POST /v1/chat/completions"} 1`,
		`toolshed_sessions_total{front="chat"} 1`,
		`toolshed_searches_total{mode="hybrid",path="keyword"} 1`,
		`toolshed_tool_calls_total{outcome="ok",plugin="textkit",tool="slugify"} 1`,
		`toolshed_tool_calls_total{outcome="ok",plugin="builtin",tool="tool_search"} 1`,
		`toolshed_plugin_call_duration_seconds_count{plugin="textkit"} 1`,
		`toolshed_plugin_compiles_total 1`,
		`toolshed_plugin_instantiations_total`,
		`toolshed_plugin_snapshots_total`,
		`toolshed_plugin_restores_total`,
		`toolshed_catalog_reloads_total 1`,
		`toolshed_tool_definition_tokens_total{kind="all_loaded"}`,
		`toolshed_tool_definition_tokens_total{kind="sent"}`,
		`toolshed_model_tokens_total{kind="prompt"}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestServeRefusesOpenListen: beyond loopback without keys needs --open.
func TestServeRefusesOpenListen(t *testing.T) {
	code, _, errs := runCLI("serve", "--addr", "0.0.0.0:0", "--plugins", bundled)
	if code != 1 || !strings.Contains(errs, "refusing to serve on 0.0.0.0:0") || !strings.Contains(errs, "server.api_keys") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs = runCLI("serve", "--addr", "bad", "--plugins", bundled)
	if code != 1 || !strings.Contains(errs, "server.addr") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestServeDrains: shutdown lets a request in progress finish.
func TestServeDrains(t *testing.T) {
	s := startServe(t, &scripted.Model{Delay: 300 * time.Millisecond}, nil)
	// Compile the plugin first: the drained request should be a typical one.
	if _, err := s.client("").CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Messages: user(`use slugify with {"text":"warm"} to url-slug`)}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg, _ := config.Load(config.Source{})
	done := make(chan error, 1)
	go func() { done <- s.server.serve(ctx, ln, &cfg.Config, io.Discard) }()
	result := make(chan string, 1)
	go func() {
		_, body := postJSON(t, "http://"+ln.Addr().String()+"/v1/chat/completions", "",
			`{"messages":[{"role":"user","content":"use slugify with {\"text\":\"A_B\"} to url-slug"}]}`)
		result <- body
	}()
	time.Sleep(150 * time.Millisecond) // the request is in its first round
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if body := <-result; !strings.Contains(body, "answer: a-b") {
		t.Fatalf("the request in progress was cut: %s", body)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// TestServeWithoutUpstream: with no model configured the agent endpoints
// say what to set, and the rest (catalog, MCP) works.
func TestServeWithoutUpstream(t *testing.T) {
	s := startServe(t, &scripted.Model{}, map[string]string{"model.base_url": ""})
	resp, body := postJSON(t, s.url+"/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 503 || !strings.Contains(body, "model.base_url") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	r, err := http.Get(s.url + "/v1/models")
	if err != nil || r.StatusCode != 503 {
		t.Fatalf("models: %v %v", r, err)
	}
	r.Body.Close()
	r, err = http.Get(s.url + "/v1/search?q=slug")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("search: %v %v", r, err)
	}
	r.Body.Close()
}

// TestServeRefusesBrowserAttacks: a page in the user's browser cannot
// drive the local server: foreign Host names (DNS rebinding), cross-site
// requests and non-JSON bodies are refused.
func TestServeRefusesBrowserAttacks(t *testing.T) {
	s := startServe(t, &scripted.Model{}, nil)
	body := `{"messages":[{"role":"user","content":"hi"}]}`
	do := func(mod func(*http.Request)) (int, string) {
		req, _ := http.NewRequest("POST", s.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		mod(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := do(func(r *http.Request) { r.Host = "attacker.example:8080" }); code != 403 || !strings.Contains(b, "DNS rebinding") {
		t.Errorf("foreign Host: %d %s", code, b)
	}
	if code, b := do(func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }); code != 415 {
		t.Errorf("text/plain: %d %s", code, b)
	}
	if code, b := do(func(r *http.Request) {
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Origin", "http://attacker.example")
	}); code != 403 {
		t.Errorf("cross-site: %d %s", code, b)
	}
	if code, b := do(func(r *http.Request) { r.Host = "localhost:1234" }); code != 200 {
		t.Errorf("localhost: %d %s", code, b)
	}
}

// TestServeChartArtifact: a chart made through the OpenAI endpoint reaches
// the client as a URL it can fetch under the API key (and inline when
// small), which the model was given to show the user; past its
// retention, the URL answers 404.
func TestServeChartArtifact(t *testing.T) {
	const key = "test-key-0123456789abcdef"
	dir := wasmbuild.Bundled(t, "../..", "chart")
	artifacts := t.TempDir()
	grants := filepath.Join(t.TempDir(), "grants.json")
	os.WriteFile(grants, []byte(`{"plugins": {"chart": {"artifacts": "`+artifacts+`"}}}`), 0o644)
	s := startServe(t, &scripted.Model{}, map[string]string{"plugins.dir": dir, "plugins.grants": grants,
		"server.api_keys": key, "server.public_url": "https://toolshed.example/", "artifacts.inline_kb": "64"})
	ask := `use createBarChart with {"title":"Orders","labels":["Paris","Lyon"],"series":[{"name":"n","values":[3,4]}]} to bar chart`
	req, _ := http.NewRequest("POST", s.url+"/v1/chat/completions", strings.NewReader(`{"model":"scripted","messages":[{"role":"user","content":`+strconv.Quote(ask)+`}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
		Toolshed struct {
			Artifacts []struct {
				ID, Name, ContentType, URL, Data string
				Size                             int64
			}
		}
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if len(out.Toolshed.Artifacts) != 1 {
		t.Fatalf("%d %+v", resp.StatusCode, out)
	}
	a := out.Toolshed.Artifacts[0]
	if a.URL != "https://toolshed.example/v1/artifacts/"+a.ID || !strings.HasPrefix(a.Data, "data:image/svg+xml;base64,") || a.Size == 0 {
		t.Fatalf("artifact %+v", a)
	}
	// The model was told the link (the scripted model answers with the tool's text).
	if answer := out.Choices[0].Message.Content; !strings.Contains(answer, a.URL) || strings.Contains(answer, artifacts) {
		t.Fatalf("answer %q", answer)
	}
	get := func(key string) (*http.Response, string) { return send(t, "GET", s.url+"/v1/artifacts/"+a.ID, key, "") }
	if resp, _ := get(""); resp.StatusCode != 401 {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
	r, body := get(key)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(body, "Paris") ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET: %d %v %.80s", r.StatusCode, r.Header, body)
	}
	if data, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(a.Data, "data:image/svg+xml;base64,")); string(data) != body {
		t.Fatal("inline data differs from the served file")
	}
	// Past its retention: gone.
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(filepath.Join(artifacts, a.ID), old, old)
	if r, body := get(key); r.StatusCode != 404 || !strings.Contains(body, "artifact_not_found") {
		t.Fatalf("past retention: %d %s", r.StatusCode, body)
	}
	if n, err := s.server.agent.artifacts.Sweep(); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(artifacts, a.ID)); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
}
