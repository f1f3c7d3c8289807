package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wordVec is a scripted embedding: one dimension per known word of the
// text (8 dimensions), so that texts sharing words are near.
func wordVec(s string) []float32 {
	words := []string{"rain", "umbrella", "invoice", "payment", "flight", "ticket", "song", "music"}
	v := make([]float32, len(words)+1)
	v[len(words)] = 0.01 // never zero
	for _, w := range strings.Fields(strings.ToLower(s)) {
		if i := slices.Index(words, strings.Trim(w, ".,:?!")); i >= 0 {
			v[i] += 1
		}
	}
	return v
}

type embReq struct {
	Input []string `json:"input"`
	Model string   `json:"model"`
}

// server is an OpenAI-compatible embeddings endpoint on 127.0.0.1;
// answer writes the body for a decoded request (nil: wordVec answers,
// in reverse order of index, as a server may).
func server(t *testing.T, answer func(w http.ResponseWriter, req embReq)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusNotFound)
			return
		}
		var req embReq
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if answer != nil {
			answer(w, req)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, item{"embedding", i, wordVec(req.Input[i])})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func client(srv *httptest.Server) *Client {
	return &Client{BaseURL: srv.URL + "/v1", Model: "m", Key: "k", Batch: 3}
}

func TestEmbedBatchesOrdersAndCaches(t *testing.T) {
	srv, calls := server(t, nil)
	c := client(srv)
	texts := []string{"rain", "umbrella rain", "invoice", "payment", "flight", "ticket", "song"}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 { // 7 texts, batches of 3
		t.Fatalf("%d calls, want 3", n)
	}
	for i, v := range got {
		want, _ := unit(wordVec(texts[i]))
		if !slices.Equal(v, want) {
			t.Fatalf("text %d: %v, want %v (answers came in reverse order)", i, v, want)
		}
	}
	// Cached: only the new text is sent.
	if _, err := c.Embed(context.Background(), []string{"rain", "music", "invoice"}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("%d calls after a mostly cached embedding, want 4", n)
	}
	// A bounded cache forgets the oldest.
	small := client(srv)
	small.CacheEntries = 2
	small.Embed(context.Background(), []string{"rain", "invoice", "song"})
	before := calls.Load()
	small.Embed(context.Background(), []string{"invoice", "song"})
	if calls.Load() != before {
		t.Fatal("the two newest entries were not kept")
	}
	small.Embed(context.Background(), []string{"rain"})
	if calls.Load() != before+1 {
		t.Fatal("the oldest entry was not forgotten")
	}
}

// TestEmbedRefusesBadAnswers: every answer that does not give one finite,
// non-zero vector per text, all of one dimension, is an error naming what
// is wrong, and nothing of it is cached.
func TestEmbedRefusesBadAnswers(t *testing.T) {
	item := func(i int, v string) string {
		return fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, v)
	}
	list := func(items ...string) string { return `{"object":"list","data":[` + strings.Join(items, ",") + `]}` }
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"too few", list(item(0, "[1,0]")), 200, "answered 1 vectors for 2 texts"},
		{"repeated index", list(item(0, "[1,0]"), item(0, "[0,1]")), 200, "index 0"},
		{"index out of range", list(item(0, "[1,0]"), item(5, "[0,1]")), 200, "index 5"},
		{"negative index", list(item(0, "[1,0]"), item(-1, "[0,1]")), 200, "index -1"},
		{"mixed dimensions", list(item(0, "[1,0]"), item(1, "[0,1,0]")), 200, "dimensions"},
		{"zero vector", list(item(0, "[1,0]"), item(1, "[0,0]")), 200, "length zero"},
		{"empty vector", list(item(0, "[1,0]"), item(1, "[]")), 200, "0 dimensions"},
		{"overflowing value", list(item(0, "[1,0]"), item(1, "[1e39,0]")), 200, "embed: m"},
		{"not JSON", "<html>gateway</html>", 200, "embed: m"},
		{"server error", `{"error":{"message":"overloaded","type":"server_error"}}`, 500, "overloaded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := server(t, func(w http.ResponseWriter, req embReq) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			c := client(srv)
			_, err := c.Embed(context.Background(), []string{"rain", "song"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			n := calls.Load()
			c.Embed(context.Background(), []string{"rain"})
			if calls.Load() == n {
				t.Fatal("a text of a refused answer was cached")
			}
		})
	}
}

// TestEmbedBoundsTheAnswer: an endpoint answering without end is cut off
// at MaxResponseBytes with ErrTooLarge.
func TestEmbedBoundsTheAnswer(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, req embReq) {
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
		chunk := strings.Repeat("0.1,", 1<<14)
		for i := 0; i < 1<<10; i++ { // 64 MiB, unless the client hangs up
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	c := client(srv)
	c.MaxResponseBytes = 1 << 20
	_, err := c.Embed(context.Background(), []string{"rain"})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

// TestEmbedHonoursDeadline: a stalled endpoint gives up at the context's
// deadline.
func TestEmbedHonoursDeadline(t *testing.T) {
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, req embReq) { <-release })
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := client(srv).Embed(ctx, []string{"rain"}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Embed did not return after its deadline")
	}
}

func TestVectorsRank(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	vecs := [][]float32{{1, 0}, {0, 2}, {1, 1}, {2, 0}} // a and d point the same way
	v, err := NewVectors(names, vecs)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Rank([]float32{3, 0}, 10); !slices.Equal(got, []string{"a", "d", "c", "b"}) {
		t.Fatalf("Rank = %v (ties go to the earlier name)", got)
	}
	if got := v.Rank([]float32{0, 1}, 2); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("Rank k=2 = %v", got)
	}
	if got := v.At(3); !slices.Equal(got, []float32{1, 0}) {
		t.Fatalf("At(3) = %v, want d scaled to length 1", got)
	}
	for _, q := range [][]float32{{1}, {0, 0}, {float32(math.NaN()), 1}, nil} {
		if got := v.Rank(q, 3); got != nil {
			t.Fatalf("Rank(%v) = %v, want nothing", q, got)
		}
	}
	if _, err := NewVectors(names, vecs[:3]); err == nil {
		t.Fatal("4 names and 3 vectors accepted")
	}
	if _, err := NewVectors([]string{"a", "b"}, [][]float32{{1, 0}, {1}}); err == nil {
		t.Fatal("mixed dimensions accepted")
	}
	if _, err := NewVectors([]string{"a"}, [][]float32{{0, 0}}); err == nil {
		t.Fatal("a zero vector accepted")
	}
}

func TestToolText(t *testing.T) {
	for _, c := range [][3]string{
		{"getWeatherForecast", "Gets the  forecast.", "get Weather Forecast: Gets the forecast."},
		{"stock_price.get-v2", "x", "stock price get v2: x"},
		{"HTTPServer", "", "HTTPServer: "},
	} {
		if got := ToolText(c[0], c[1]); got != c[2] {
			t.Errorf("ToolText(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
	if got := ToolText("t", strings.Repeat("word ", 500)); len([]rune(got)) != MaxTextRunes {
		t.Fatalf("a long description gives %d runes, want %d", len([]rune(got)), MaxTextRunes)
	}
}

// BenchmarkRank: the semantic stage's brute-force ranking of a catalog
// (go test -bench Rank ./internal/embed/).
func BenchmarkRank(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d/dim=512", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(1))
			names := make([]string, n)
			vecs := make([][]float32, n)
			for i := range vecs {
				names[i] = fmt.Sprint("t", i)
				vecs[i] = make([]float32, 512)
				for j := range vecs[i] {
					vecs[i][j] = float32(r.NormFloat64())
				}
			}
			v, err := NewVectors(names, vecs)
			if err != nil {
				b.Fatal(err)
			}
			q := vecs[n/2]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got := v.Rank(q, 1000); len(got) != 1000 || got[0] != names[n/2] {
					b.Fatalf("nearest %v", got[:1])
				}
			}
		})
	}
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for n := 0; n < 12; n++ {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(r.Intn(7)-3), float32(r.Intn(7)-3)
			want += float64(a[i] * b[i])
		}
		if got := dot(a, b); float64(got) != want {
			t.Fatalf("dot of %d: %v, want %v", n, got, want)
		}
	}
}

// TestEmbedConcurrent: one Client embeds from many goroutines at once
// (run under the race detector by make test), each getting its own
// texts' vectors.
func TestEmbedConcurrent(t *testing.T) {
	srv, _ := server(t, nil)
	c := client(srv)
	c.CacheEntries = 5 // forgetting while others read
	words := []string{"rain", "umbrella", "invoice", "payment", "flight", "ticket", "song", "music"}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				texts := []string{words[(g+i)%8], words[(g+2*i)%8] + " " + words[i%8]}
				got, err := c.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				for j, v := range got {
					want, _ := unit(wordVec(texts[j]))
					if !slices.Equal(v, want) {
						t.Errorf("%q: %v, want %v", texts[j], v, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestEmbedModelChanged: when a fresh vector's dimension differs from a
// cached one's (the model behind the endpoint changed), the call fails,
// the cache is emptied, and the next call embeds everything afresh.
func TestEmbedModelChanged(t *testing.T) {
	var dims atomic.Int32
	dims.Store(2)
	srv, _ := server(t, func(w http.ResponseWriter, req embReq) {
		var items []string
		for i := range req.Input {
			v := strings.TrimSuffix(strings.Repeat("1,", int(dims.Load())), ",")
			items = append(items, fmt.Sprintf(`{"index":%d,"embedding":[%s]}`, i, v))
		}
		io.WriteString(w, `{"object":"list","data":[`+strings.Join(items, ",")+`]}`)
	})
	c := client(srv)
	if _, err := c.Embed(context.Background(), []string{"rain"}); err != nil {
		t.Fatal(err)
	}
	dims.Store(3)
	if _, err := c.Embed(context.Background(), []string{"rain", "song"}); err == nil || !strings.Contains(err.Error(), "cache is cleared") {
		t.Fatalf("mixed dimensions: %v", err)
	}
	got, err := c.Embed(context.Background(), []string{"rain", "song"})
	if err != nil || len(got[0]) != 3 || len(got[1]) != 3 {
		t.Fatalf("after the cache was cleared: %v, %v", got, err)
	}
}

// TestEmbedRetries: a dropped connection and a 503 are asked again (at
// most Retries times); a 400 and a malformed answer are not.
func TestEmbedRetries(t *testing.T) {
	type step func(w http.ResponseWriter, req embReq)
	drop := func(w http.ResponseWriter, req embReq) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	status := func(code int) step {
		return func(w http.ResponseWriter, req embReq) {
			w.WriteHeader(code)
			io.WriteString(w, `{"error":{"message":"status `+fmt.Sprint(code)+`"}}`)
		}
	}
	ok := func(w http.ResponseWriter, req embReq) {
		io.WriteString(w, `{"object":"list","data":[{"index":0,"embedding":[1,0]}]}`)
	}
	bad := func(w http.ResponseWriter, req embReq) { io.WriteString(w, `{"object":"list","data":[]}`) }
	stall := func(w http.ResponseWriter, req embReq) { time.Sleep(3 * time.Second) }
	for _, c := range []struct {
		name   string
		steps  []step
		calls  int32
		failed bool
	}{
		{"dropped, then served", []step{drop, ok}, 2, false},
		{"503 twice, then served", []step{status(503), status(503), ok}, 3, false},
		{"429, then served", []step{status(429), ok}, 2, false},
		{"always dropped", []step{drop, drop, drop, ok}, 3, true},
		{"400", []step{status(400), ok}, 1, true},
		{"malformed", []step{bad, ok}, 1, true},
		{"stalled, then served", []step{stall, ok}, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			srv, _ := server(t, func(w http.ResponseWriter, req embReq) { c.steps[min(int(n.Add(1))-1, len(c.steps)-1)](w, req) })
			cl := client(srv)
			cl.CallTimeout = time.Second
			_, err := cl.Embed(context.Background(), []string{"rain"})
			if (err != nil) != c.failed || n.Load() != c.calls {
				t.Fatalf("err %v after %d calls; want failed=%v after %d", err, n.Load(), c.failed, c.calls)
			}
		})
	}
}
