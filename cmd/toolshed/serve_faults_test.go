package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/internal/scripted"
)

// oaiError is the OpenAI error shape, param and code included.
type oaiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, body string) oaiError {
	t.Helper()
	var e oaiError
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	return e
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// answerJSON writes a plain chat completion with text.
func answerJSON(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion",
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: text}, FinishReason: "stop"}},
		Usage:   openai.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}})
}

const hiBody = `{"messages":[{"role":"user","content":"hi"}]}`

// internals are what an error message must not show a client.
var internals = []string{"127.0.0.1", "dial tcp", `Post "`, "openai.", "Go value", "*host."}

func noInternals(t *testing.T, body string) {
	t.Helper()
	for _, s := range internals {
		if strings.Contains(body, s) {
			t.Errorf("the error shows %q: %s", s, body)
		}
	}
}

// TestServeFaultRateLimit (issue 14, point 5): a 429 whose Retry-After is
// longer than the server waits reaches the client at once as a 429 with
// the same Retry-After (one upstream call, not four); a short one is
// waited out here and the request succeeds.
func TestServeFaultRateLimit(t *testing.T) {
	model := &scripted.Model{}
	model.Before = func(n int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "10")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return true
	}
	s := startServe(t, model, map[string]string{"model.retries": "3"})
	start := time.Now()
	resp, body := postJSON(t, s.url+"/v1/chat/completions", "", hiBody)
	took := time.Since(start)
	e := decodeError(t, body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "10" || str(e.Error.Code) != "rate_limit_exceeded" ||
		e.Error.Type != "requests" || resp.Header.Get("X-Should-Retry") == "false" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	// One upstream call: the 10 s were not waited out here (a wait would
	// have retried). The time is logged, not asserted.
	if model.Calls() != 1 {
		t.Fatalf("%d upstream calls in %s, want 1 at once", model.Calls(), took)
	}
	t.Logf("429 Retry-After 10: 429 in %s, %d upstream call", took.Round(time.Millisecond), model.Calls())

	// Retry-After: 1 is waited out, once.
	model2 := &scripted.Model{}
	model2.Before = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429)
		} else {
			answerJSON(w, "hello")
		}
		return true
	}
	s2 := startServe(t, model2, map[string]string{"model.retries": "3"})
	start = time.Now()
	resp, body = postJSON(t, s2.url+"/v1/chat/completions", "", hiBody)
	took = time.Since(start)
	if resp.StatusCode != 200 || !strings.Contains(body, `"hello"`) || model2.Calls() != 2 || took < 950*time.Millisecond {
		t.Fatalf("%d after %s, %d calls: %s", resp.StatusCode, took, model2.Calls(), body)
	}
	t.Logf("429 Retry-After 1, then an answer: 200 in %s, %d upstream calls", took.Round(time.Millisecond), model2.Calls())
}

// TestServeFaultStatuses (points 5 and 10): 4xx pass through with the
// upstream's code and param and are not retried; a 5xx and a dropped
// connection are retried (model.retries=2: three calls) and answer 502,
// telling the SDKs not to retry again; no message shows the upstream's
// address or Go's names.
func TestServeFaultStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(w http.ResponseWriter)
		status int
		calls  int
		code   string
		param  string
		final  bool
	}{
		{"400", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 400)
		}, 400, 1, "context_length_exceeded", "messages", true},
		{"401", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 401)
		}, 401, 1, "invalid_api_key", "<null>", true},
		{"500", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"boom at 10.1.2.3","type":"server_error"}}`, 500)
		}, 502, 3, "upstream_error", "<null>", true},
		{"closed", func(w http.ResponseWriter) {
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
		}, 502, 3, "upstream_unreachable", "<null>", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &scripted.Model{}
			model.Before = func(n int, w http.ResponseWriter, r *http.Request) bool { tc.fault(w); return true }
			s := startServe(t, model, map[string]string{"model.retries": "2"})
			start := time.Now()
			resp, body := postJSON(t, s.url+"/v1/chat/completions", "", hiBody)
			e := decodeError(t, body)
			if resp.StatusCode != tc.status || str(e.Error.Code) != tc.code || str(e.Error.Param) != tc.param ||
				(resp.Header.Get("X-Should-Retry") == "false") != tc.final || model.Calls() != tc.calls {
				t.Fatalf("%d (%d calls) %v %s", resp.StatusCode, model.Calls(), resp.Header, body)
			}
			noInternals(t, body)
			if strings.Contains(body, "sk-abc") || strings.Contains(body, "10.1.2.3") {
				t.Errorf("the upstream's secret or internal shows: %s", body)
			}
			// Backoff 0.5 s then 1 s: well under the SDKs' own (logged; the
			// number of calls above is the outcome).
			took := time.Since(start)
			t.Logf("upstream %s: %d in %s, %d upstream calls, x-should-retry %q", tc.name, resp.StatusCode,
				took.Round(time.Millisecond), model.Calls(), resp.Header.Get("X-Should-Retry"))
			if !strings.Contains(s.logs.String(), resp.Header.Get("X-Request-Id")) {
				t.Errorf("the log has no record under %s", resp.Header.Get("X-Request-Id"))
			}
		})
	}
}

// TestServeFaultHang (point 6): a hanging upstream is given model.timeout
// once: a 504 after it, one upstream call however many retries are
// configured, streamed or not.
func TestServeFaultHang(t *testing.T) {
	model := &scripted.Model{}
	model.Before = func(n int, w http.ResponseWriter, r *http.Request) bool {
		io.ReadAll(r.Body) // so the server notices the client go
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
		return true
	}
	s := startServe(t, model, map[string]string{"model.retries": "3", "model.timeout": "1s"})
	for i, body := range []string{hiBody, `{"messages":[{"role":"user","content":"hi"}],"stream":true}`} {
		start := time.Now()
		resp, out := postJSON(t, s.url+"/v1/chat/completions", "", body)
		took := time.Since(start)
		e := decodeError(t, out)
		if resp.StatusCode != 504 || str(e.Error.Code) != "upstream_timeout" || resp.Header.Get("X-Should-Retry") != "false" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
		}
		// The upstream hangs for 20 s: a 504 with one call is the timeout's
		// work (no retry, no wait for the hang); the time is logged.
		if took < 900*time.Millisecond || model.Calls() != i+1 {
			t.Fatalf("request %d: 504 after %s with %d upstream calls; want about 1 s and one call", i+1, took, model.Calls())
		}
		t.Logf("hang, model.timeout=1s, stream=%v: 504 in %s, one upstream call", i == 1, took.Round(time.Millisecond))
	}
}

// loopModel calls tool_search every round, saying which round it is.
func loopModel() *scripted.Model {
	m := &scripted.Model{}
	var round atomic.Int32
	m.Before = func(n int, w http.ResponseWriter, r *http.Request) bool {
		var req openai.ChatCompletionRequest
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.Messages) <= 2 { // a new request: system and user
			round.Store(0)
		}
		msg := scripted.ToolCall("c1", "tool_search", `{"query":"weather"}`)
		msg.Content = fmt.Sprintf("step %d", round.Add(1))
		if req.Stream {
			scripted.WriteStream(w, msg, "tool_calls", nil, false)
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion",
			Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: "tool_calls"}}})
		return true
	}
	return m
}

// TestServeRoundLimit (point 7): the round limit answers 200 with what
// the model said and finish_reason "length", plain and streamed alike,
// after exactly agent.max_rounds upstream calls.
func TestServeRoundLimit(t *testing.T) {
	model := loopModel()
	s := startServe(t, model, map[string]string{"agent.max_rounds": "3", "search.mode": "keyword"})
	c := s.client("")
	resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: user("weather?")})
	want := "step 1\n\nstep 2\n\nstep 3"
	if err != nil || resp.Choices[0].FinishReason != "length" || resp.Choices[0].Message.Content != want || model.Calls() != 3 {
		t.Fatalf("%+v %v (%d calls)", resp, err, model.Calls())
	}
	text, finish := readStream(t, c, openai.ChatCompletionRequest{Messages: user("weather?")})
	if text != want || finish != "length" || model.Calls() != 6 {
		t.Fatalf("stream %q %q (%d calls)", text, finish, model.Calls())
	}
}

func readStream(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) (string, openai.FinishReason) {
	t.Helper()
	req.Stream = true
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text strings.Builder
	var finish openai.FinishReason
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), finish
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
}

// TestServeStreamMatchesPlain (point 8): a model that talks while it
// calls tools gives the same content streamed and plain: every round's
// text, rounds apart by a blank line.
func TestServeStreamMatchesPlain(t *testing.T) {
	s := startServe(t, &scripted.Model{Narrate: "Looking."}, nil)
	c := s.client("")
	req := openai.ChatCompletionRequest{Messages: user(`use slugify with {"text":"A_B"} to url-slug`)}
	resp, err := c.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	text, finish := readStream(t, c, req)
	want := "Looking.\n\nLooking.\n\nanswer: a-b"
	if resp.Choices[0].Message.Content != want || text != want || finish != "stop" {
		t.Fatalf("plain %q, streamed %q", resp.Choices[0].Message.Content, text)
	}
}

// TestServeContinuation (point 9): a request that discovers slugify, runs
// it and then calls a client tool hands the client a sealed call id; the
// follow-up that sends it back goes on with slugify sent upstream and the
// server-side messages restored, with the model's own call ids. A
// tampered id restores nothing.
func TestServeContinuation(t *testing.T) {
	model := &scripted.Model{}
	s := startServe(t, model, nil)
	c := s.client("")
	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "get_location",
		Description: "The user's city", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	ask := user(`use slugify with {"text":"A_B"} to url-slug then get_location with {}`)
	resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: ask, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Choices[0].Message
	if resp.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || !strings.HasPrefix(msg.ToolCalls[0].ID, "call_ts2.") {
		t.Fatalf("%+v", resp.Choices[0])
	}
	followUp := func(id string) openai.ChatCompletionRequest {
		m := msg
		m.ToolCalls = slices.Clone(msg.ToolCalls)
		m.ToolCalls[0].ID = id
		msgs := append(slices.Clone(ask), m, openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Content: "Paris"})
		return openai.ChatCompletionRequest{Messages: msgs, Tools: tools}
	}
	before := len(model.Requests())
	resp, err = c.CreateChatCompletion(context.Background(), followUp(msg.ToolCalls[0].ID))
	if err != nil || resp.Choices[0].Message.Content != "answer: Paris" {
		t.Fatalf("%+v %v", resp, err)
	}
	up := model.Requests()[before]
	if names := scripted.ToolNames(up); !slices.Contains(names, "slugify") {
		t.Fatalf("the follow-up lost slugify: %v", names)
	}
	var roles []string
	for _, m := range up.Messages {
		roles = append(roles, m.Role+":"+m.Name+m.ToolCallID)
	}
	if got := strings.Join(roles, " "); got != "system: user: assistant: tool:tool_searchc1 assistant: tool:slugifyc2 assistant: tool:c3" {
		t.Fatalf("upstream messages %s", got)
	}
	if up.Messages[5].Content != "a-b" || up.Messages[6].ToolCalls[0].ID != "c3" {
		t.Fatalf("restored %+v", up.Messages)
	}

	// Tampered: one character of the payload changed.
	id := []byte(msg.ToolCalls[0].ID)
	id[12] ^= 1
	before = len(model.Requests())
	if _, err := c.CreateChatCompletion(context.Background(), followUp(string(id))); err != nil {
		t.Fatal(err)
	}
	if names := scripted.ToolNames(model.Requests()[before]); slices.Contains(names, "slugify") || len(model.Requests()[before].Messages) != 4 {
		t.Fatalf("a forged id restored state: %v", names)
	}
}

// TestServeErrorShapes (point 10): every answer has an x-request-id;
// 404, 405, a bad key and a body of the wrong type are OpenAI errors with
// code or param; GET /v1/models/{id} answers the model or 404.
func TestServeErrorShapes(t *testing.T) {
	const key = "test-key-0123456789abcdef"
	s := startServe(t, &scripted.Model{}, map[string]string{"server.api_keys": key})
	get := func(method, path, k, body string) (*http.Response, string) {
		resp, b := send(t, method, s.url+path, k, body)
		if !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_") {
			t.Errorf("%s %s: no x-request-id", method, path)
		}
		return resp, b
	}
	for _, tc := range []struct {
		method, path, key, body string
		status                  int
		code, param             string
	}{
		{"GET", "/v1/models", "wrong", "", 401, "invalid_api_key", "<null>"},
		{"GET", "/v1/nothing", key, "", 404, "unknown_url", "<null>"},
		{"DELETE", "/v1/chat/completions", key, "", 405, "method_not_allowed", "<null>"},
		{"POST", "/v1/chat/completions", key, `{"messages":"hi"}`, 400, "<null>", "messages"},
		{"POST", "/v1/chat/completions", key, `{"messages":[]}`, 400, "<null>", "messages"},
		{"POST", "/v1/chat/completions", key, `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400, "<null>", "tools[0]"},
		{"GET", "/v1/models/nope", key, "", 404, "model_not_found", "model"},
	} {
		resp, body := get(tc.method, tc.path, tc.key, tc.body)
		e := decodeError(t, body)
		if resp.StatusCode != tc.status || str(e.Error.Code) != tc.code || str(e.Error.Param) != tc.param {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, resp.StatusCode, body)
		}
		noInternals(t, body)
	}
	resp, body := get("GET", "/v1/models/scripted-large", key, "")
	var m openai.Model
	json.Unmarshal([]byte(body), &m)
	if resp.StatusCode != 200 || m.ID != "scripted-large" || m.Object != "model" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, _ := get("GET", "/healthz", key, ""); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
}

// TestSelectionCallOnTheWire (point 10): LLM search's selection request
// sends temperature 0, and its tokens count in the answer's usage.
func TestSelectionCallOnTheWire(t *testing.T) {
	model := &scripted.Model{Choose: `{"tools":["slugify"]}`}
	s := startServe(t, model, map[string]string{"search.mode": "llm"})
	resp, err := s.client("").CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Messages: user(`use slugify with {"text":"A_B"} to url-slug`)})
	if err != nil || resp.Choices[0].Message.Content != "answer: a-b" {
		t.Fatalf("%+v %v", resp, err)
	}
	selections, prompt := 0, 0
	for i, b := range model.Bodies() {
		var raw map[string]json.RawMessage
		json.Unmarshal(b, &raw)
		if _, tools := raw["tools"]; !tools {
			selections++
			if string(raw["temperature"]) != "0" {
				t.Errorf("selection request without temperature 0: %s", b)
			}
		}
		prompt += 10 * len(model.Requests()[i].Messages) // the scripted model's count
	}
	if selections != 1 || resp.Usage.PromptTokens != prompt {
		t.Fatalf("%d selection requests; usage %+v, upstream prompt tokens %d", selections, resp.Usage, prompt)
	}
}

// TestServeContinuationAcrossReplicas: two servers sharing
// server.continuation_key accept each other's continuation ids (a load
// balancer may send the follow-up to either); a server with another key
// restores nothing from them.
func TestServeContinuationAcrossReplicas(t *testing.T) {
	key := map[string]string{"server.continuation_key": "c2hhcmVkLWtleS1mb3ItdGhlLXdob2xlLWZsZWV0LTAxMjM0NTY3"}
	model := &scripted.Model{}
	a, b := startServe(t, model, key), startServe(t, model, key)
	other := startServe(t, model, map[string]string{"server.continuation_key": "b3RoZXIta2V5LWZvci10aGUtd2hvbGUtZmxlZXQtMDEyMzQ1Njc="})
	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "get_location",
		Description: "The user's city", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	ask := user(`use slugify with {"text":"A_B"} to url-slug then get_location with {}`)
	resp, err := a.client("").CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: ask, Tools: tools})
	if err != nil || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	msg := resp.Choices[0].Message
	follow := openai.ChatCompletionRequest{Tools: tools, Messages: append(slices.Clone(ask), msg,
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: msg.ToolCalls[0].ID, Content: "Paris"})}
	for _, c := range []struct {
		s       *served
		restore bool
	}{{b, true}, {other, false}} {
		before := len(model.Requests())
		if _, err := c.s.client("").CreateChatCompletion(context.Background(), follow); err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(scripted.ToolNames(model.Requests()[before]), "slugify"); got != c.restore {
			t.Fatalf("restored slugify = %v, want %v", got, c.restore)
		}
	}
}
