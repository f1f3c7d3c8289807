package openaiapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/openaiapi"
)

// sdkCall is one call of an OpenAI SDK (Python's and Node's rule, the same
// in both): up to 2 retries of a 408, 409, 429 or 5xx or a dropped
// connection, unless the answer says x-should-retry: false (true forces a
// retry). The SDKs wait between attempts; the count is what matters here.
// It returns the attempts made and the last status.
func sdkCall(t *testing.T, url, body string) (int, int, http.Header) {
	t.Helper()
	const maxRetries = 2
	for attempt := 1; ; attempt++ {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		status, retry := 0, true
		var hdr http.Header
		if err == nil {
			resp.Body.Close()
			status, hdr = resp.StatusCode, resp.Header
			switch should := resp.Header.Get("X-Should-Retry"); {
			case should == "false":
				retry = false
			case should == "true":
			default:
				retry = status == 408 || status == 409 || status == 429 || status >= 500
			}
		}
		if !retry || attempt > maxRetries {
			return attempt, status, hdr
		}
	}
}

// TestRetriesNeverMultiply: for each persistent upstream fault, one SDK
// call costs one round of the server's own retries (Retries+1 upstream
// calls), never the product of both: every error the server retried says
// x-should-retry: false, a 429 included. A 429 whose Retry-After is too
// long to wait here is not retried here: the SDK may wait it out, one
// upstream call per SDK attempt.
func TestRetriesNeverMultiply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(w http.ResponseWriter)
		stream  bool
		perCall int // upstream calls per SDK attempt
		final   bool
	}{
		{"429 Retry-After 1", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"slow down","type":"requests"}}`, 429)
		}, false, 4, true},
		{"429 retry-after-ms", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After-Ms", "20")
			http.Error(w, `{"error":{"message":"slow down","type":"requests"}}`, 429)
		}, false, 4, true},
		{"429 no header", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"slow down","type":"requests"}}`, 429)
		}, false, 4, true},
		{"429 streamed", func(w http.ResponseWriter) {
			http.Error(w, `{"error":{"message":"slow down","type":"requests"}}`, 429)
		}, true, 4, true},
		{"500", func(w http.ResponseWriter) { http.Error(w, "boom", 500) }, false, 4, true},
		{"502", func(w http.ResponseWriter) { http.Error(w, "bad gateway", 502) }, false, 4, true},
		{"503 streamed", func(w http.ResponseWriter) { http.Error(w, "unavailable", 503) }, true, 4, true},
		{"409", func(w http.ResponseWriter) { http.Error(w, `{"error":{"message":"conflict"}}`, 409) }, false, 4, true},
		{"408", func(w http.ResponseWriter) { http.Error(w, `{"error":{"message":"timeout"}}`, 408) }, false, 4, true},
		{"connection dropped", func(w http.ResponseWriter) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}, false, 4, true},
		{"429 Retry-After 60 (over max_retry_wait)", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "60")
			http.Error(w, `{"error":{"message":"slow down","type":"requests"}}`, 429)
		}, false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var upstream atomic.Int32
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				upstream.Add(1)
				tc.fault(w)
			}))
			defer model.Close()
			h, err := host.New(host.Options{Upstream: &host.Upstream{BaseURL: model.URL + "/v1"}, Model: "m",
				RetryBackoff: 10 * time.Millisecond, Retries: 3})
			if err != nil {
				t.Fatal(err)
			}
			cfg := openai.DefaultConfig("")
			cfg.BaseURL = model.URL + "/v1"
			srv := httptest.NewServer(openaiapi.New(h, &openaiapi.Options{Upstream: openai.NewClientWithConfig(cfg)}))
			defer srv.Close()
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
			if tc.stream {
				body += `,"stream":true`
			}
			attempts, status, hdr := sdkCall(t, srv.URL, body+"}")
			wantAttempts := 1
			if !tc.final {
				wantAttempts = 3
			}
			if got := int(upstream.Load()); attempts != wantAttempts || got != tc.perCall*attempts {
				t.Fatalf("one SDK call: %d attempts, %d upstream calls (last HTTP %d, x-should-retry %q); want %d attempts of %d upstream calls",
					attempts, got, status, hdr.Get("X-Should-Retry"), wantAttempts, tc.perCall)
			}
			if status < 400 || (hdr.Get("X-Should-Retry") == "false") != tc.final {
				t.Fatalf("HTTP %d, x-should-retry %q", status, hdr.Get("X-Should-Retry"))
			}
			if !tc.final && hdr.Get("Retry-After") != "60" {
				t.Fatalf("the Retry-After left to the client: %q", hdr.Get("Retry-After"))
			}
		})
	}
}
