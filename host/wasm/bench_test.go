package wasm

// Runtime measurements. The benchmarks run with go test -bench; the
// report prints every figure of one run as a table:
//
//	go test -run TestRuntimeReport -v ./host/wasm -args -report
//	(or: make bench-runtime)

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/internal/wasmbuild"
	"github.com/toolshed/toolshed/sdk/abi"
)

var report = flag.Bool("report", false, "print the runtime report (TestRuntimeReport)")

// echo is the same logic as benchkit's echo tool, for the native baseline.
type echo struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

// echoArgs is a ~100-byte JSON argument object.
const echoArgs = `{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}`

func nativeEcho(raw []byte) []byte {
	var e echo
	if err := json.Unmarshal(raw, &e); err != nil {
		panic(err)
	}
	out, _ := json.Marshal(e)
	res, _ := json.Marshal(abi.Result{Content: string(out), Structured: out})
	return res
}

type fixture struct {
	snap  *catalog.Snapshot
	echo  *catalog.Tool
	wrap  *catalog.Tool
	spin  *catalog.Tool
	code  []byte
	cache string
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	path := wasmbuild.Build(tb, "testdata/plugins/benchkit")
	code, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	sum := sha256.Sum256(code)
	man := `{"name": "benchkit", "version": "1.0.0", "abi_version": 1, "wasm": "benchkit.wasm", "sha256": "` + hex.EncodeToString(sum[:]) + `",
	  "limits": {"timeout_ms": 60000},
	  "tools": [{"name": "echo", "description": "echo", "parameters": {"type": "object"}},
	            {"name": "wrap", "description": "wrap", "parameters": {"type": "object"}},
	            {"name": "spin", "description": "spin", "parameters": {"type": "object"}}]}`
	os.WriteFile(filepath.Join(dir, "benchkit.json"), []byte(man), 0o644)
	os.WriteFile(filepath.Join(dir, "benchkit.wasm"), code, 0o644)
	snap, err := catalog.Load(dir, nil)
	if err != nil || len(snap.Errors) > 0 {
		tb.Fatal(err, snap.Errors)
	}
	f := &fixture{snap: snap, code: code, cache: filepath.Join(tb.TempDir(), "cache")}
	f.echo, _ = snap.Tool("echo")
	f.wrap, _ = snap.Tool("wrap")
	f.spin, _ = snap.Tool("spin")
	return f
}

func (f *fixture) host(tb testing.TB, cache string, pool int) *Host {
	return f.hostMode(tb, cache, pool, modeDefault)
}

// Instance modes compared by the report: the default (restored from a
// snapshot on Linux), fresh (split module, data laid out by the host,
// _initialize run), and whole (the module as built: wazero applies its
// data segments one by one, _initialize run).
const (
	modeDefault = "restored from the snapshot"
	modeFresh   = "fresh, data segments merged"
	modeWhole   = "fresh, module as built"
)

func (f *fixture) hostMode(tb testing.TB, cache string, pool int, mode string) *Host {
	// The compile budget is not under test here: an uncached compile of
	// benchkit under the race detector on a loaded machine can pass 30 s.
	h, err := New(&Options{CacheDir: cache, PoolSize: pool, FreshInstances: mode != modeDefault,
		Caps: Caps{CompileTimeout: 5 * time.Minute}})
	if err != nil {
		tb.Fatal(err)
	}
	h.noSplit = mode == modeWhole
	return h
}

func benchCompile(b *testing.B, f *fixture, cache string) {
	for i := 0; i < b.N; i++ {
		h := f.host(b, cache, -1)
		p, _ := h.Plugin(f.echo.Plugin)
		if err := p.Compile(context.Background()); err != nil {
			b.Fatal(err)
		}
		h.Close(context.Background())
	}
}

func BenchmarkCompileUncached(b *testing.B) { benchCompile(b, newFixture(b), "off") }

func BenchmarkCompileCached(b *testing.B) {
	f := newFixture(b)
	benchCompile(&testing.B{N: 1}, f, f.cache) // fill the disk cache
	b.ResetTimer()
	benchCompile(b, f, f.cache)
}

func BenchmarkInstantiate(b *testing.B)      { benchInstantiate(b, newFixture(b), modeDefault) }
func BenchmarkInstantiateFresh(b *testing.B) { benchInstantiate(b, newFixture(b), modeFresh) }
func BenchmarkInstantiateWhole(b *testing.B) { benchInstantiate(b, newFixture(b), modeWhole) }

func benchInstantiate(b *testing.B, f *fixture, mode string) {
	h := f.hostMode(b, f.cache, -1, mode)
	defer h.Close(context.Background())
	p, _ := h.Plugin(f.echo.Plugin)
	p.Compile(context.Background())
	if in, err := p.instantiate(context.Background()); err == nil { // the snapshot is taken here
		in.close(context.Background())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := p.instantiate(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		in.close(context.Background())
		b.StartTimer()
	}
}

// benchFirstCall: a new session's first call (new instance + call).
func benchFirstCall(b *testing.B, pool int) { benchFirstCallMode(b, newFixture(b), pool, modeDefault) }

func benchFirstCallMode(b *testing.B, f *fixture, pool int, mode string) {
	h := f.hostMode(b, f.cache, pool, mode)
	defer h.Close(context.Background())
	p, _ := h.Plugin(f.echo.Plugin)
	p.Warm(context.Background())
	args := json.RawMessage(echoArgs)
	if pool < 0 { // the snapshot is taken by the first instance
		s := h.NewSession()
		s.Call(context.Background(), f.echo, args)
		s.Close(context.Background())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pool > 0 {
			b.StopTimer()
			waitPool(p, pool)
			b.StartTimer()
		}
		s := h.NewSession()
		if _, err := s.Call(context.Background(), f.echo, args); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close(context.Background())
		b.StartTimer()
	}
}

func waitPool(p *Plugin, n int) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		ready := len(p.pool) >= n
		p.mu.Unlock()
		if ready {
			return
		}
	}
}

func BenchmarkFirstCallPool(b *testing.B)   { benchFirstCall(b, 2) }
func BenchmarkFirstCallNoPool(b *testing.B) { benchFirstCall(b, -1) }

func BenchmarkWarmCall(b *testing.B) { benchWarm(b, true) }

// BenchmarkWarmCallNoCloseOnDone is the same call on a runtime without
// WithCloseOnContextDone (which the host never runs: measurement only).
func BenchmarkWarmCallNoCloseOnDone(b *testing.B) { benchWarm(b, false) }

func benchWarm(b *testing.B, closeOnDone bool) {
	f := newFixture(b)
	h := f.host(b, f.cache, -1)
	h.noCloseOnDone = !closeOnDone
	defer h.Close(context.Background())
	s := h.NewSession()
	defer s.Close(context.Background())
	args := json.RawMessage(echoArgs)
	s.Call(context.Background(), f.echo, args)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Call(context.Background(), f.echo, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNativeCall(b *testing.B) {
	raw := []byte(echoArgs)
	for i := 0; i < b.N; i++ {
		nativeEcho(raw)
	}
}

// spinModule runs benchkit's spin through the raw ABI on a runtime with
// or without WithCloseOnContextDone.
func spinRunner(tb testing.TB, code []byte, closeOnDone bool) (run func(n int), closeFn func()) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone))
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if _, err := rt.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32) int32 { return -1 }).Export(abi.HostCall).
		NewFunctionBuilder().WithFunc(func(int32, int32) int32 { return -1 }).Export(abi.HostResult).
		Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, code, wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		tb.Fatal(err)
	}
	alloc, callFn := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportCall)
	return func(n int) {
			req := []byte(fmt.Sprintf(`{"tool":"spin","arguments":{"n":%d}}`, n))
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			r, err := alloc.Call(cctx, uint64(len(req)))
			if err != nil {
				tb.Fatal(err)
			}
			mod.Memory().Write(uint32(r[0]), req)
			if _, err := callFn.Call(cctx, r[0], uint64(len(req))); err != nil {
				tb.Fatal(err)
			}
		}, func() {
			rt.Close(ctx)
		}
}

const spinN = 20_000_000

func benchSpin(b *testing.B, closeOnDone bool) {
	f := newFixture(b)
	run, done := spinRunner(b, f.code, closeOnDone)
	defer done()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(spinN)
	}
}

func BenchmarkSpinCloseOnDone(b *testing.B) { benchSpin(b, true) }
func BenchmarkSpinPlain(b *testing.B)       { benchSpin(b, false) }

// memoryPerInstance is the Go heap and the proportional resident memory
// (PSS; 0 off Linux) taken by n live instances, each having served one
// call, divided by n, and their linear memory.
func memoryPerInstance(tb testing.TB, f *fixture, n int, mode string) (heapMiB, pssMiB, linearMiB float64) {
	h := f.hostMode(tb, f.cache, -1, mode)
	defer h.Close(context.Background())
	p, _ := h.Plugin(f.echo.Plugin)
	p.Compile(context.Background())
	warm := h.NewSession() // the snapshot is taken here
	warm.Call(context.Background(), f.echo, json.RawMessage(echoArgs))
	defer warm.Close(context.Background())
	before, pss0 := heapInUse(), pss()
	var sessions []*Session
	var linear uint64
	for i := 0; i < n; i++ {
		s := h.NewSession()
		if _, err := s.Call(context.Background(), f.echo, json.RawMessage(echoArgs)); err != nil {
			tb.Fatal(err)
		}
		sessions = append(sessions, s)
		for _, in := range s.insts {
			linear += uint64(in.mod.Memory().Size())
		}
	}
	after, pss1 := heapInUse(), pss()
	for _, s := range sessions {
		s.Close(context.Background())
	}
	return float64(after-before) / float64(n) / (1 << 20), (float64(pss1) - float64(pss0)) / float64(n) / (1 << 20),
		float64(linear) / float64(n) / (1 << 20)
}

// pss is this process's proportional set size in bytes (0 off Linux): a
// page shared by k mappings counts 1/k, so instances sharing their
// snapshot's pages are not counted once each, as RSS would.
func pss() uint64 { return procmem.PSS() }

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestCompileChild is the fresh process of the cached-compile figure: it
// compiles once from the disk cache named by TOOLSHED_BENCH_CACHE and
// prints the time.
func TestCompileChild(t *testing.T) {
	cache := os.Getenv("TOOLSHED_BENCH_CACHE")
	if cache == "" {
		t.Skip("run by TestRuntimeReport")
	}
	f := newFixture(t)
	h := f.host(t, cache, -1)
	defer h.Close(context.Background())
	p, _ := h.Plugin(f.echo.Plugin)
	start := time.Now()
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CHILD-COMPILE-NS %d\n", time.Since(start).Nanoseconds())
}

func childCompile(t *testing.T, cache string) time.Duration {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompileChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TOOLSHED_BENCH_CACHE="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var ns int64
		if _, err := fmt.Sscanf(line, "CHILD-COMPILE-NS %d", &ns); err == nil {
			return time.Duration(ns)
		}
	}
	t.Fatalf("child printed no time:\n%s", out)
	return 0
}

// firstCalls times n sessions' first call of tool with a warm pool (pool
// 2) or none (pool -1), sorted.
func firstCalls(t *testing.T, f *fixture, tool *catalog.Tool, n, pool int, mode string) []time.Duration {
	h := f.hostMode(t, f.cache, pool, mode)
	defer h.Close(context.Background())
	p, _ := h.Plugin(tool.Plugin)
	p.Warm(context.Background())
	var lat []time.Duration
	for i := -1; i < n; i++ { // the first, not counted, takes the snapshot
		if pool > 0 {
			waitPool(p, pool)
		}
		s := h.NewSession()
		start := time.Now()
		if _, err := s.Call(context.Background(), tool, json.RawMessage(echoArgs)); err != nil {
			t.Fatal(err)
		}
		if i >= 0 {
			lat = append(lat, time.Since(start))
		}
		s.Close(context.Background())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// TestRuntimeReport prints every runtime figure of one run, with ratios.
func TestRuntimeReport(t *testing.T) {
	if !*report {
		t.Skip("pass -args -report (or run make bench-runtime)")
	}
	f := newFixture(t)
	per := func(fn func(*testing.B)) time.Duration {
		r := testing.Benchmark(fn)
		return time.Duration(r.NsPerOp())
	}
	uncached := per(func(b *testing.B) { benchCompile(b, f, "off") })
	benchCompile(&testing.B{N: 1}, f, f.cache)
	cachedChild := childCompile(t, f.cache)
	inst := map[string]time.Duration{}
	for _, m := range []string{modeWhole, modeFresh, modeDefault} {
		inst[m] = per(func(b *testing.B) { benchInstantiate(b, f, m) })
	}
	firstPool := per(BenchmarkFirstCallPool)
	firstNoPool := per(BenchmarkFirstCallNoPool)
	warm := per(BenchmarkWarmCall)
	warmPlain := per(BenchmarkWarmCallNoCloseOnDone)
	native := per(BenchmarkNativeCall)
	spinClose := per(func(b *testing.B) { benchSpin(b, true) })
	spinPlain := per(func(b *testing.B) { benchSpin(b, false) })
	type mem struct{ heap, pss, linear float64 }
	mems := map[string]mem{}
	for _, m := range []string{modeWhole, modeFresh, modeDefault} {
		var x mem
		x.heap, x.pss, x.linear = memoryPerInstance(t, f, 20, m)
		mems[m] = x
	}

	// First-call percentiles with the pool, over many sessions: echo, whose
	// result has its arguments' type (the SDK prepares that type's encoder
	// at registration), and wrap, whose result type is met on the call.
	lat := firstCalls(t, f, f.echo, 200, 2, modeDefault)
	latWrap := firstCalls(t, f, f.wrap, 200, 2, modeDefault)
	latFreshPool := firstCalls(t, f, f.echo, 200, 2, modeFresh)
	latNoPool := firstCalls(t, f, f.echo, 100, -1, modeDefault)
	latFreshNoPool := firstCalls(t, f, f.echo, 100, -1, modeFresh)
	pct := func(l []time.Duration) string {
		return fmt.Sprintf("%s / %s", l[len(l)/2].Round(time.Microsecond), l[len(l)*99/100].Round(time.Microsecond))
	}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "measure\tvalue\tcomparison\n")
	fmt.Fprintf(tw, "compile, uncached (module %.1f MiB)\t%s\t\n", float64(len(f.code))/(1<<20), uncached.Round(time.Millisecond))
	fmt.Fprintf(tw, "compile, from the disk cache, fresh process\t%s\t%.0f× faster than uncached\n", cachedChild.Round(time.Microsecond), float64(uncached)/float64(cachedChild))
	for _, m := range []string{modeWhole, modeFresh, modeDefault} {
		cmp := ""
		if m != modeWhole {
			cmp = fmt.Sprintf("%.1f× faster than as built", float64(inst[modeWhole])/float64(inst[m]))
		}
		fmt.Fprintf(tw, "instantiate, %s\t%s\t%s\n", m, inst[m].Round(time.Microsecond), cmp)
	}
	fmt.Fprintf(tw, "session's first call, no pool (mean)\t%s\t\n", firstNoPool.Round(time.Microsecond))
	fmt.Fprintf(tw, "session's first call, warm pool (mean)\t%s\t%.1f× faster than without\n", firstPool.Round(time.Microsecond), float64(firstNoPool)/float64(firstPool))
	fmt.Fprintf(tw, "session's first call, no pool (p50 / p99 of 100)\t%s\tfresh: %s\n", pct(latNoPool), pct(latFreshNoPool))
	fmt.Fprintf(tw, "session's first call, warm pool (p50 / p99 of 200)\t%s\tfresh: %s\n", pct(lat), pct(latFreshPool))
	fmt.Fprintf(tw, "  the same, result of a type not prepared (wrap)\t%s\t\n", pct(latWrap))
	fmt.Fprintf(tw, "warm call, ~100-byte JSON round trip\t%s\t\n", warm.Round(100*time.Nanosecond))
	fmt.Fprintf(tw, "same logic as a native Go function\t%s\toverhead %s per call (%.0f×)\n", native.Round(100*time.Nanosecond), (warm - native).Round(100*time.Nanosecond), float64(warm)/float64(native))
	fmt.Fprintf(tw, "warm call without WithCloseOnContextDone (not used)\t%s\tWithCloseOnContextDone costs %+.0f%%\n", warmPlain.Round(100*time.Nanosecond), 100*(float64(warm)/float64(warmPlain)-1))
	for _, m := range []string{modeWhole, modeFresh, modeDefault} {
		x := mems[m]
		fmt.Fprintf(tw, "memory per live instance, %s: Go heap / PSS / linear memory\t%.2f / %.2f / %.2f MiB\t\n", m, x.heap, x.pss, x.linear)
	}
	fmt.Fprintf(tw, "loop-heavy call (%d iterations), WithCloseOnContextDone\t%s\t%+.1f%% vs without (%s)\n", spinN, spinClose.Round(time.Microsecond), 100*(float64(spinClose)/float64(spinPlain)-1), spinPlain.Round(time.Microsecond))
	tw.Flush()
	fmt.Printf("\nToolshed plugin runtime, %s, %d CPUs, %s\n\n%s", runtime.Version(), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), b.String())
}
