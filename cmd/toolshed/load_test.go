package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/internal/scripted"
)

var (
	loadN     = flag.Int("load-n", 500, "TestServeLoad: concurrent chat completions")
	loadSlots = flag.String("load-slots", "256", "TestServeLoad: server.max_concurrent")
)

// TestServeLoad fires load-n chat completions at once at toolshed serve,
// each going through tool_search and one plugin call (a fresh instance per
// request) against the scripted upstream, and reports throughput, latency
// and peak memory. Server, upstream and clients share this process, so the
// memory is theirs together. make bench-serve prints the table.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	s := startServe(t, &scripted.Model{NoRecord: true}, map[string]string{"server.max_concurrent": *loadSlots})
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.url + "/v1"
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *loadN}}
	c := openai.NewClientWithConfig(cfg)
	// One request first, so the plugin is compiled as in a running server.
	if _, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: user(`use slugify with {"text":"warm"} to url-slug`)}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	lat := make([]time.Duration, *loadN)
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < *loadN; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			t0 := time.Now()
			text := fmt.Sprintf("Req_%d", i)
			resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
				Messages: user(`use slugify with {"text":"` + text + `"} to url-slug`)})
			lat[i] = time.Since(t0)
			if err == nil && resp.Choices[0].Message.Content != "answer: "+strings.ToLower(strings.ReplaceAll(text, "_", "-")) {
				err = fmt.Errorf("answer %q", resp.Choices[0].Message.Content)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed; first: %v", n, *loadN, firstErr.Load())
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	st := s.server.runtime.Stats()
	rows := [][2]string{
		{"concurrent chat completions", strconv.Itoa(*loadN)},
		{"server.max_concurrent", *loadSlots},
		{"errors", "0"},
		{"wall time", took.Round(time.Millisecond).String()},
		{"throughput", fmt.Sprintf("%.0f requests/s", float64(*loadN)/took.Seconds())},
		{"latency p50", pct(0.50).Round(time.Millisecond).String()},
		{"latency p99", pct(0.99).Round(time.Millisecond).String()},
		{"latency max", lat[len(lat)-1].Round(time.Millisecond).String()},
		{"peak Go heap in use", fmt.Sprintf("%.0f MiB (%.0f MiB before)", float64(peakHeap.Load())/(1<<20), float64(base.HeapInuse)/(1<<20))},
		{"peak resident set (VmHWM)", vmHWM()},
		{"plugin instances made", fmt.Sprintf("%d (pool hits %d, misses %d)", st.Instantiations, st.PoolHits, st.PoolMisses)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| load (each: 3 model rounds, tool_search, one plugin call) | |\n|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
	}
	fmt.Fprintf(&b, "\n%d cores, %s; server, scripted upstream and clients in one process.\n", runtime.NumCPU(), runtime.Version())
	t.Log(b.String())
}

// vmHWM is the process's peak resident set, from /proc (Linux).
func vmHWM() string {
	kib := procHWM("/proc/self/status")
	if kib == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(kib)/1024)
}
