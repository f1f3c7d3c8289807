package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/toolshed/toolshed/bench/echo"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// Plugin call cost: the same tool logic (package echo) called natively,
// through a warm wasm instance, as a session's first call (from the pool
// and without one), and as an executable started once per call.

// echoPlugin is the echo tool built for the benchmark: a plugin directory
// with its manifest and module, and the per-call executable.
type echoPlugin struct {
	moduleDir string // the bench module's directory
	dir       string // plugin directory: echo.json + echo.wasm
	cli       string // the executable
	snap      *catalog.Snapshot
	tool      *catalog.Tool
}

// buildEcho compiles echo/wasm and echo/cli with the standard toolchain
// into tmp. moduleDir is the bench module's directory.
func buildEcho(moduleDir, tmp string) (*echoPlugin, error) {
	e := &echoPlugin{moduleDir: moduleDir, dir: filepath.Join(tmp, "plugins"), cli: filepath.Join(tmp, "echo-cli")}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, err
	}
	wasmPath := filepath.Join(e.dir, "echo.wasm")
	build := func(env []string, args ...string) error {
		cmd := exec.Command("go", append([]string{"build", "-trimpath", "-buildvcs=false"}, args...)...)
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %v: %v\n%s", args, err, out)
		}
		return nil
	}
	if err := build([]string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "-buildmode=c-shared", "-o", wasmPath, "./echo/wasm"); err != nil {
		return nil, err
	}
	if err := build(nil, "-o", e.cli, "./echo/cli"); err != nil {
		return nil, err
	}
	code, err := os.ReadFile(wasmPath)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(code)
	man := `{"name": "echo", "version": "1.0.0", "abi_version": 1, "wasm": "echo.wasm", "sha256": "` + hex.EncodeToString(sum[:]) + `",
	  "limits": {"timeout_ms": 60000},
	  "tools": [{"name": "echo", "description": "Echo a small JSON object", "parameters": {"type": "object",
	    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}]}`
	if err := os.WriteFile(filepath.Join(e.dir, "echo.json"), []byte(man), 0o644); err != nil {
		return nil, err
	}
	if e.snap, err = catalog.Load(e.dir, nil); err != nil {
		return nil, err
	}
	if len(e.snap.Errors) > 0 {
		return nil, e.snap.Errors[0]
	}
	var ok bool
	if e.tool, ok = e.snap.Tool("echo"); !ok {
		return nil, fmt.Errorf("echo tool not in the catalog")
	}
	return e, nil
}

// callRow is one way of calling the tool.
type callRow struct {
	Way        string
	Calls      int
	Mean, P50  time.Duration
	P99        time.Duration
	VsNative   float64 // mean / native mean
	VsWarmWasm float64 // mean / warm wasm mean
	// Paired, for the C plugin's row, are the native function and the Go
	// plugin's warm instance timed in the same loop, one call of each in
	// turn, so that a machine's load weighs on the three alike.
	Paired *pairedCalls `json:",omitempty"`
}

// pairedCalls are the rows timed in the same loop as the C plugin's.
type pairedCalls struct{ Native, Go callRow }

func stats(way string, lat []time.Duration) callRow {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	r := callRow{Way: way, Calls: len(lat)}
	r.Mean = sum / time.Duration(len(lat))
	r.P50 = lat[len(lat)/2]
	r.P99 = lat[min(len(lat)-1, (len(lat)*99+99)/100-1)]
	return r
}

// newRuntime is a wasm host with its compilation cache in tmp (the cache
// is filled by the first compile; every figure below is after it).
//
// fresh turns snapshots off: every instance instantiated and initialised
// from scratch, the comparison for the default (restored from a
// copy-on-write snapshot on Linux).
func newRuntime(tmp string, pool int, fresh ...bool) (*wasm.Host, error) {
	return wasm.New(&wasm.Options{CacheDir: filepath.Join(tmp, "cache"), PoolSize: pool, FreshInstances: len(fresh) > 0 && fresh[0]})
}

func callCost(e *echoPlugin, tmp string, n int) ([]callRow, error) {
	ctx := context.Background()
	args := json.RawMessage(echo.Example)
	want, err := echo.Call(args)
	if err != nil {
		return nil, err
	}
	var rows []callRow

	// Native: the function itself.
	lat := make([]time.Duration, 0, 20*n)
	for i := 0; i < 20*n; i++ {
		t0 := time.Now()
		if _, err := echo.Call(args); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	rows = append(rows, stats("native Go function", lat))

	// Warm: one session, its instance already made.
	rt, err := newRuntime(tmp, -1)
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	s := rt.NewSession()
	res, err := s.Call(ctx, e.tool, args)
	if err != nil {
		return nil, err
	}
	var got struct{ Structured json.RawMessage }
	json.Unmarshal(want, &got)
	if !bytes.Equal(res.Structured, got.Structured) {
		return nil, fmt.Errorf("the plugin answered %s, the native function %s", res.Structured, got.Structured)
	}
	lat = lat[:0]
	for i := 0; i < 5*n; i++ {
		t0 := time.Now()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	s.Close(ctx)
	rows = append(rows, stats("wasm, warm instance", lat))

	// A session's first call, pool of 2 ready: new session, call; the
	// wait for the pool to refill is not timed.
	pooled, err := newRuntime(tmp, 2)
	if err != nil {
		return nil, err
	}
	defer pooled.Close(ctx)
	p, err := pooled.Plugin(e.tool.Plugin)
	if err != nil {
		return nil, err
	}
	if err := p.Warm(ctx); err != nil {
		return nil, err
	}
	// The pool refills in the background after each take: wait until the
	// instance taken last has been replaced (and a moment for it to be
	// pooled), and keep only calls the pool served.
	lat = lat[:0]
	for tries := 0; len(lat) < n; tries++ {
		if tries >= 2*n {
			return nil, fmt.Errorf("first calls: only %d of %d tries were served from the pool", len(lat), tries)
		}
		waitInstances(pooled, pooled.Stats().PoolHits+pooled.Stats().PoolMisses+2)
		time.Sleep(2 * time.Millisecond)
		before := pooled.Stats().PoolMisses
		t0 := time.Now()
		s := pooled.NewSession()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		s.Close(ctx)
		if pooled.Stats().PoolMisses == before {
			lat = append(lat, d)
		}
	}
	rows = append(rows, stats("wasm, session's first call (pool)", lat))

	// A session's first call without a pool: instantiate, then call.
	lat = lat[:0]
	for i := 0; i < n; i++ {
		t0 := time.Now()
		s := rt.NewSession()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
		s.Close(ctx)
	}
	rows = append(rows, stats("wasm, session's first call (no pool)", lat))

	// A fresh process per call.
	lat = lat[:0]
	for i := 0; i < n; i++ {
		t0 := time.Now()
		cmd := exec.Command(e.cli)
		cmd.Stdin = bytes.NewReader(args)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("echo-cli: %w", err)
		}
		lat = append(lat, time.Since(t0))
		if !bytes.Equal(out, want) {
			return nil, fmt.Errorf("echo-cli answered %s, want %s", out, want)
		}
	}
	rows = append(rows, stats("fresh process per call (executable)", lat))

	// A session's first call without a pool, snapshots off: each
	// instance initialised from scratch (the path before snapshots, and
	// still the one off Linux).
	fresh, err := newRuntime(tmp, -1, true)
	if err != nil {
		return nil, err
	}
	defer fresh.Close(ctx)
	lat = lat[:0]
	for i := 0; i < n+1; i++ {
		t0 := time.Now()
		s := fresh.NewSession()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return nil, err
		}
		if i > 0 { // the first compiles
			lat = append(lat, time.Since(t0))
		}
		s.Close(ctx)
	}
	rows = append(rows, stats("wasm, session's first call (no pool, fresh instances)", lat))

	// The same echo in C (the C SDK's example, clang + wasi-libc), warm:
	// what the ABI itself costs without Go's runtime in the guest. Left
	// out, with a note, where the toolchain is missing.
	cRow, err := cEchoWarm(e, tmp, 5*n, want)
	switch {
	case errors.Is(err, wasmbuild.ErrNoC):
		fmt.Fprintf(os.Stderr, "calls: no C row: %v\n", err)
	case err != nil:
		return nil, err
	}

	native, warm := rows[0].Mean, rows[1].Mean
	for i := range rows {
		rows[i].VsNative = float64(rows[i].Mean) / float64(native)
		rows[i].VsWarmWasm = float64(rows[i].Mean) / float64(warm)
	}
	if err == nil {
		// Its ratios are to the native function and the Go plugin timed
		// in the same loop (cEchoWarm), not to the rows above.
		rows = append(rows, cRow)
	}
	// The same echo as an Extism plugin (extism.go).
	ext, err := extismEcho(e, tmp, n, want, rows)
	if err != nil {
		return nil, err
	}
	return append(rows, ext...), nil
}

// waitInstances waits (10 s at most) until the runtime has made n
// instances in all: the pool is full again.
func waitInstances(h *wasm.Host, n uint64) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && h.Stats().Instantiations < n; {
		time.Sleep(200 * time.Microsecond)
	}
}

// cWay names the C plugin's row; reading.go finds it by this name.
const cWay = "wasm, C plugin (clang + wasi-libc), warm instance"

// cEchoWarm builds the C SDK's example echo (sdk/c/examples/echo) beside
// the Go one and, after checking it answers what the native function
// does, times n warm calls of it in one loop with n native calls and n
// warm calls of the Go plugin, one of each in turn.
func cEchoWarm(e *echoPlugin, tmp string, n int, want []byte) (callRow, error) {
	ctx := context.Background()
	sdk := filepath.Join(filepath.Dir(e.moduleDir), "sdk", "c")
	dir := filepath.Join(tmp, "cplugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return callRow{}, err
	}
	if err := wasmbuild.CompileC(filepath.Join(dir, "echo.wasm"), filepath.Join(sdk, "toolshed"), filepath.Join(sdk, "examples", "echo", "echo.c")); err != nil {
		return callRow{}, err
	}
	code, err := os.ReadFile(filepath.Join(dir, "echo.wasm"))
	if err != nil {
		return callRow{}, err
	}
	man, err := os.ReadFile(filepath.Join(sdk, "examples", "echo", "echo.json"))
	if err != nil {
		return callRow{}, err
	}
	sum := sha256.Sum256(code)
	man = regexp.MustCompile(`"sha256": "[0-9a-f]*"`).ReplaceAll(man, []byte(`"sha256": "`+hex.EncodeToString(sum[:])+`"`))
	if err := os.WriteFile(filepath.Join(dir, "echo.json"), man, 0o644); err != nil {
		return callRow{}, err
	}
	snap, err := catalog.Load(dir, &catalog.Options{RequireModules: true, CheckModule: wasm.CheckModule})
	if err != nil {
		return callRow{}, err
	}
	tool, ok := snap.Tool("echo")
	if !ok {
		return callRow{}, fmt.Errorf("the C echo was not admitted: %v", snap.Errors)
	}
	rt, err := newRuntime(tmp, -1)
	if err != nil {
		return callRow{}, err
	}
	defer rt.Close(ctx)
	sc, sg := rt.NewSession(), rt.NewSession()
	defer sc.Close(ctx)
	defer sg.Close(ctx)
	args := json.RawMessage(echo.Example)
	res, err := sc.Call(ctx, tool, args)
	if err != nil {
		return callRow{}, err
	}
	var native struct{ Structured json.RawMessage }
	json.Unmarshal(want, &native)
	if !bytes.Equal(res.Structured, native.Structured) {
		return callRow{}, fmt.Errorf("the C plugin answered %s, the native function %s", res.Structured, native.Structured)
	}
	if _, err := sg.Call(ctx, e.tool, args); err != nil {
		return callRow{}, err
	}
	latN, latG, latC := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := echo.Call(args); err != nil {
			return callRow{}, err
		}
		t1 := time.Now()
		if _, err := sg.Call(ctx, e.tool, args); err != nil {
			return callRow{}, err
		}
		t2 := time.Now()
		if _, err := sc.Call(ctx, tool, args); err != nil {
			return callRow{}, err
		}
		t3 := time.Now()
		latN, latG, latC = append(latN, t1.Sub(t0)), append(latG, t2.Sub(t1)), append(latC, t3.Sub(t2))
	}
	c := stats(cWay, latC)
	p := &pairedCalls{Native: stats("native Go function (same loop)", latN), Go: stats("wasm, warm instance (same loop)", latG)}
	for _, r := range []*callRow{&p.Native, &p.Go, &c} {
		r.VsNative = float64(r.Mean) / float64(p.Native.Mean)
		r.VsWarmWasm = float64(r.Mean) / float64(p.Go.Mean)
	}
	c.Paired = p
	return c, nil
}
