package host_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

func faultHost(t *testing.T, handler http.HandlerFunc, opts host.Options) *host.Host {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	opts.Client, opts.Model = openai.NewClientWithConfig(cfg), "m"
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 10 * time.Millisecond
	}
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func run(h *host.Host) (*host.Response, error) {
	return h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}})
}

const okBody = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`

func TestRetriesThenSucceeds(t *testing.T) {
	var n atomic.Int32
	h := faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			http.Error(w, `{"error":{"message":"slow down","type":"rate_limit"}}`, 429)
		case 2:
			http.Error(w, `{"error":{"message":"oops","type":"server"}}`, 503)
		default:
			w.Write([]byte(okBody))
		}
	}, host.Options{})
	resp, err := run(h)
	if err != nil || resp.Answer != "hello" || n.Load() != 3 {
		t.Fatalf("resp %+v err %v calls %d", resp, err, n.Load())
	}
}

func TestGivesUpWithClearError(t *testing.T) {
	var n atomic.Int32
	h := faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, `{"error":{"message":"down for maintenance","type":"server"}}`, 500)
	}, host.Options{Retries: 2})
	_, err := run(h)
	if err == nil || !strings.Contains(err.Error(), "down for maintenance") || !strings.Contains(err.Error(), "after 3 attempts") || n.Load() != 3 {
		t.Fatalf("err %v calls %d", err, n.Load())
	}
	// A 400 is not retried.
	n.Store(0)
	h = faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, `{"error":{"message":"bad request","type":"invalid"}}`, 400)
	}, host.Options{})
	if _, err := run(h); err == nil || n.Load() != 1 {
		t.Fatalf("400: err %v calls %d", err, n.Load())
	}
}

func TestTimeoutAndDeadEndpoint(t *testing.T) {
	h := faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so the server notices the client go
		select {
		case <-time.After(5 * time.Minute):
		case <-r.Context().Done():
		}
	}, host.Options{RequestTimeout: 100 * time.Millisecond, Retries: 1})
	// The outcome: the deadline's error, long before the model's 5 minutes
	// (the bound is one a machine ten times slower meets, not a speed).
	start := time.Now()
	_, err := run(h)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Minute {
		t.Fatalf("slow model: err %v after %s", err, time.Since(start))
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = url + "/v1"
	dead, _ := host.New(host.Options{Client: openai.NewClientWithConfig(cfg), Model: "m", Retries: 1, RetryBackoff: time.Millisecond})
	if _, err := run(dead); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("dead endpoint: %v", err)
	}
}

func TestMalformedToolCallRecovers(t *testing.T) {
	var n atomic.Int32
	h := faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
			  "tool_calls":[{"id":"c1","type":"function","function":{"name":"tool_search","arguments":"{\"query\": \"wea"}}]}}]}`))
			return
		}
		w.Write([]byte(okBody))
	}, host.Options{})
	resp, err := run(h)
	if err != nil || resp.Answer != "hello" || !resp.Rounds[0].ToolCalls[0].IsError {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

func TestRoundLimit(t *testing.T) {
	h := faultHost(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
		  "tool_calls":[{"id":"c1","type":"function","function":{"name":"tool_search","arguments":"{\"query\": \"weather\"}"}}]}}]}`))
	}, host.Options{MaxRounds: 3})
	resp, err := run(h)
	if !errors.Is(err, host.ErrMaxRounds) || len(resp.Rounds) != 3 || resp.FinishReason != openai.FinishReasonLength {
		t.Fatalf("err %v rounds %d finish %q", err, len(resp.Rounds), resp.FinishReason)
	}
}

// upstreamHost is a Host that speaks the wire itself (Options.Upstream).
func upstreamHost(t *testing.T, handler http.HandlerFunc, opts host.Options) *host.Host {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	opts.Upstream, opts.Model = &host.Upstream{BaseURL: srv.URL + "/v1", APIKey: "k"}, "m"
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRetryAfterAndDeadline: a Retry-After is waited out when short, not
// when long or past the deadline (a *ModelError at once, with it); a
// timeout is not retried.
func TestRetryAfterAndDeadline(t *testing.T) {
	var n atomic.Int32
	after := "1"
	h := upstreamHost(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", after)
			http.Error(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429)
			return
		}
		w.Write([]byte(okBody))
	}, host.Options{RetryBackoff: 10 * time.Millisecond})
	start := time.Now()
	if resp, err := run(h); err != nil || resp.Answer != "hello" || n.Load() != 2 || time.Since(start) < 950*time.Millisecond {
		t.Fatalf("short Retry-After: %v, %d calls in %s", err, n.Load(), time.Since(start))
	}
	for _, tc := range []struct {
		after    string
		deadline time.Duration
	}{{"30", time.Minute}, {"2", 500 * time.Millisecond}} {
		n.Store(0)
		after = tc.after
		ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
		start = time.Now()
		_, err := h.Run(ctx, []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}})
		cancel()
		var me *host.ModelError
		// One call and the 429 itself: waiting out Retry-After would have
		// called again (30 s within a minute) or ended in the context's
		// deadline (2 s past 500 ms); the time is not asserted.
		if !errors.As(err, &me) || me.Status != 429 || me.RetryAfter.String() != tc.after+"s" || me.Code != "rate_limit_exceeded" ||
			n.Load() != 1 {
			t.Fatalf("Retry-After %s: %v (%+v), %d calls in %s", tc.after, err, me, n.Load(), time.Since(start))
		}
	}

	// A hang: one call, RequestTimeout once, though Retries is 3.
	n.Store(0)
	slow := upstreamHost(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.ReadAll(r.Body)
		<-r.Context().Done()
	}, host.Options{RequestTimeout: 200 * time.Millisecond, RetryBackoff: 10 * time.Millisecond})
	start = time.Now()
	_, err := run(slow)
	var me *host.ModelError
	// The upstream never answers: the timeout's error and one call are the
	// outcome (the time is logged on failure only).
	if !errors.As(err, &me) || !me.Timeout || !errors.Is(err, context.DeadlineExceeded) || n.Load() != 1 {
		t.Fatalf("hang: %v, %d calls in %s", err, n.Load(), time.Since(start))
	}
}
