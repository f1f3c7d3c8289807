package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/upstream"
	"github.com/toolshed/toolshed/internal/scripted"
)

func client(t *testing.T, h http.Handler) *upstream.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &upstream.Client{Endpoint: &upstream.Endpoint{BaseURL: srv.URL + "/v1"}, Retries: 2, Backoff: time.Millisecond,
		MaxRetryWait: 2 * time.Second, RequestTimeout: time.Minute}
}

var hi = openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
	Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "t", Parameters: map[string]any{"type": "object"}}}}}

// TestErrors: every failure is an *Error saying what the upstream
// answered: its status, error object and Retry-After (seconds,
// milliseconds or a date), and how many attempts were made; retried are
// 408, 409, 429 and 5xx, a Retry-After over MaxRetryWait is not waited
// out, other 4xx are final.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    func(w http.ResponseWriter)
		attempts int
		status   int
		after    time.Duration
		code     string
	}{
		{"400 with an error object", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 400)
		}, 1, 400, 0, "context_length_exceeded"},
		{"429 retry-after-ms", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After-Ms", "5")
			http.Error(w, `{"error":{"message":"slow","code":429}}`, 429)
		}, 3, 429, 5 * time.Millisecond, "429"},
		{"429 Retry-After past max_retry_wait", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"error":{"message":"slow"}}`, 429)
		}, 1, 429, 30 * time.Second, ""},
		{"503 Retry-After as a date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			http.Error(w, "down", 503)
		}, 1, 503, 59 * time.Minute, ""},
		{"500 plain text", func(w http.ResponseWriter) { http.Error(w, "boom", 500) }, 3, 500, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); tc.fault(w) }))
			_, err := c.Complete(context.Background(), hi)
			var e *upstream.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Attempts != tc.attempts || int(n.Load()) != tc.attempts || e.Code != tc.code {
				t.Fatalf("%#v (%d calls)", err, n.Load())
			}
			if e.RetryAfter < tc.after || (tc.after == 0 && e.RetryAfter != 0) {
				t.Fatalf("Retry-After %s, want %s", e.RetryAfter, tc.after)
			}
		})
	}
}

// TestStream: a streamed answer is assembled (text, a tool call split
// over chunks, the usage); an error event in the stream and a stream cut
// short are errors, never a partial answer taken as whole.
func TestStream(t *testing.T) {
	model := &scripted.Model{}
	c := client(t, model)
	req := hi
	req.Messages = []openai.ChatCompletionMessage{{Role: "user", Content: `use t with {"a":"bcdef"} to x`}}
	var usage openai.Usage
	msg, finish, err := c.Stream(context.Background(), req, func(string) {}, func(u openai.Usage) { usage = u })
	if err != nil || finish != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"a":"bcdef"}` || usage.TotalTokens == 0 {
		t.Fatalf("%+v %s %v usage %+v", msg, finish, err, usage)
	}

	cut := client(t, &scripted.Model{Cut: true, Choose: "a long answer that breaks off"})
	req.Tools, req.Messages = nil, []openai.ChatCompletionMessage{{Role: "user", Content: "hello"}}
	var text strings.Builder
	if _, _, err := cut.Stream(context.Background(), req, func(s string) { text.WriteString(s) }, func(openai.Usage) {}); err == nil {
		t.Fatalf("a cut stream was taken whole: %q", text.String())
	}

	ev := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"he\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":\"overloaded\"}}\n\n")
	}))
	_, _, err = ev.Stream(context.Background(), req, func(string) {}, func(openai.Usage) {})
	var e *upstream.Error
	if !errors.As(err, &e) || e.Code != "overloaded" || e.Message != "overloaded" {
		t.Fatalf("error event: %#v", err)
	}
}

// TestNoChoice: an answer without a choice is an error, not an empty
// answer.
func TestNoChoice(t *testing.T) {
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[]}`))
	}))
	if _, err := c.Complete(context.Background(), hi); err == nil || !strings.Contains(err.Error(), "no choice") {
		t.Fatalf("%v", err)
	}
}
