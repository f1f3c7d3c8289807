package wasm_test

// The hostile suite: one test per class of plugin misbehaviour (issue 13,
// classes 5-10, and FIFOs in mounts), each through the real path (catalog
// plugin → Host → Session.Call, real wazero) with a module written in
// WebAssembly text (testdata/hostile/*.wat) or generated here, asserting
// containment concretely: the time to fail, the peak RSS of a child
// process running the attack, the files written, a bystander's latency.

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
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/internal/wasmbuild"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// wat assembles testdata/hostile/NAME.wat, after replacing each old
// string of edits (pairs) by the new one.
func wat(t testing.TB, name string, edits ...string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "hostile", name+".wat"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(edits); i += 2 {
		if !bytes.Contains(src, []byte(edits[i])) {
			t.Fatalf("%s.wat has no %q", name, edits[i])
		}
		src = bytes.ReplaceAll(src, []byte(edits[i]), []byte(edits[i+1]))
	}
	return wasmbuild.WAT(t, src)
}

// bystanderSpec is a well-behaved plugin: its tool "other" returns at once.
func bystanderSpec(t testing.TB) spec {
	return spec{name: "bystander", module: wat(t, "sleep"), tools: []string{"other"}}
}

// bystander calls the bystander's tool in new sessions until stopped (and
// at least once more after its first call), which returns the slowest
// call, the calls served while the attack ran (before stop), those served
// in all, and the failures. Its first call (the module's compile) is made
// before it returns, so that the counts are of calls during the attack.
func bystander(t *testing.T, h *wasm.Host, snap *catalog.Snapshot) (stop func() bystanderRun) {
	t.Helper()
	tool, _ := snap.Tool("other")
	one := func() (time.Duration, bool) {
		s := h.NewSession()
		defer s.Close(context.Background())
		start := time.Now()
		res, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
		return time.Since(start), err == nil && res.Content == "ok"
	}
	if _, ok := one(); !ok {
		t.Fatal("bystander: its first call, before any attack, failed")
	}
	var stopped atomic.Bool
	done := make(chan struct{})
	var r bystanderRun
	go func() {
		defer close(done)
		for !stopped.Load() || r.served == 0 {
			took, ok := one()
			r.slowest = max(r.slowest, took)
			switch {
			case !ok:
				r.fails++
			case !stopped.Load():
				r.during++
				r.served++
			default:
				r.served++
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() bystanderRun {
		stopped.Store(true)
		<-done
		return r
	}
}

// bystanderRun is what the bystander saw.
type bystanderRun struct {
	slowest               time.Duration
	during, served, fails int
}

// checkBystander asserts the outcome: the bystander was served, and no
// call of it failed; with during (an attack that lasts a second or more),
// it was served while the attack ran (a bystander blocked by the attack
// would not be). Its slowest call is logged, not asserted: on a loaded
// machine it says nothing about isolation.
func checkBystander(t *testing.T, stop func() bystanderRun, during bool) {
	t.Helper()
	r := stop()
	t.Logf("bystander: %d calls during the attack, %d in all, slowest %s", r.during, r.served, r.slowest)
	if r.served == 0 || r.fails > 0 || during && r.during == 0 {
		t.Errorf("bystander: %d calls served during the attack, %d in all, %d failed", r.during, r.served, r.fails)
	}
}

// timedCall calls tool in a new session and returns the error and the time.
func timedCall(t *testing.T, h *wasm.Host, snap *catalog.Snapshot, tool string) (time.Duration, error) {
	t.Helper()
	s := h.NewSession()
	defer s.Close(context.Background())
	start := time.Now()
	_, err := call(t, s, snap, tool, `{}`)
	return time.Since(start), err
}

// slack is what a call may take past its deadline before the test calls
// it not stopped: generous enough for a machine ten times slower than a
// quiet one, or both cores busy elsewhere (under the race detector, where
// every figure is several times slower, twice that). It is an outcome's
// deadline, not a speed: the attacks it bounds would run for 60 s (a sleep)
// or forever (a spin) if the limit failed. Times are logged; bounds on
// speed belong to the benchmarks (make bench-runtime).
var slack = map[bool]time.Duration{false: 15 * time.Second, true: 30 * time.Second}[raceEnabled]

// Class 5: a 60 s sleep under a 1 s timeout ends at the timeout.
func TestHostileSleep(t *testing.T) {
	snap := writePlugins(t, spec{name: "sleep", module: wat(t, "sleep"), tools: []string{"sleep"},
		limits: `{"timeout_ms": 1000}`}, bystanderSpec(t))
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	stop := bystander(t, h, snap)
	took, err := timedCall(t, h, snap, "sleep")
	checkBystander(t, stop, true)
	t.Logf("sleep 60 s under a 1 s timeout: %s, %v", took, err)
	var ce *wasm.CallError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err = %v, want a CallError that says timed out", err)
	}
	if took > time.Second+slack {
		t.Errorf("the call took %s; its deadline was 1 s", took)
	}
}

// Class 6: a table without a maximum that the module grows is refused
// before compiling; one over the element budget too; one within it works.
func TestHostileTable(t *testing.T) {
	cases := []struct {
		name, want string
		edits      []string
	}{
		{"nomax", "over the compile budget: table 0 declares no maximum size and function 2 grows a table", nil},
		{"overmax", "sum of tables' maximum sizes in elements is 200000000, over the limit of 1048576",
			[]string{"(table $t 1 funcref)", "(table $t 1 200000000 funcref)"}},
		{"bounded", "", []string{"(table $t 1 funcref)", "(table $t 1 1000 funcref)"}},
	}
	var specs []spec
	for _, c := range cases {
		specs = append(specs, spec{name: "table-" + c.name, module: wat(t, "table", c.edits...), tools: []string{"grow_" + c.name}})
	}
	snap := writePlugins(t, append(specs, bystanderSpec(t))...)
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	stop := bystander(t, h, snap)
	for _, c := range cases {
		took, err := timedCall(t, h, snap, "grow_"+c.name)
		t.Logf("%s: %s, %v", c.name, took, err)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	checkBystander(t, stop, false)
}

// Class 7: start functions and _initialize that spin end at the plugin's
// timeout, and a spinning plugin holds at most half the instantiation
// slots: a bystander's first calls stay fast while four of its sessions
// keep trying.
func TestHostileInitLoop(t *testing.T) {
	snap := writePlugins(t,
		spec{name: "initloop", module: wat(t, "initloop"), tools: []string{"spin_start"}, limits: `{"timeout_ms": 500}`},
		spec{name: "initfunc", module: wat(t, "initloop", "(start $spin)", `(export "_initialize" (func $spin))`),
			tools: []string{"spin_initialize"}, limits: `{"timeout_ms": 500}`},
		bystanderSpec(t))
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	for _, tool := range []string{"spin_start", "spin_initialize"} {
		took, err := timedCall(t, h, snap, tool)
		t.Logf("%s alone: %s, %v", tool, took, err)
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Errorf("%s: err = %v, want timed out", tool, err)
		}
		if took > 500*time.Millisecond+slack {
			t.Errorf("%s: took %s; the plugin's timeout is 500 ms", tool, took)
		}
	}
	stop := bystander(t, h, snap)
	var wg sync.WaitGroup
	deadline := time.Now().Add(2500 * time.Millisecond)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				timedCall(t, h, snap, "spin_start")
			}
		}()
	}
	wg.Wait()
	checkBystander(t, stop, true)
}

// leb appends v as unsigned LEB128.
func leb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// oneFunctionModule is a module with one function () → () of the given
// body instructions (the final end added).
func oneFunctionModule(instrs []byte) []byte {
	sect := func(m []byte, id byte, body []byte) []byte {
		return append(leb(append(m, id), uint64(len(body))), body...)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = sect(m, 1, []byte{1, 0x60, 0, 0})
	m = sect(m, 3, []byte{1, 0})
	body := append([]byte{0}, instrs...) // no locals
	body = append(body, 0x0b)
	code := leb(leb(nil, 1), uint64(len(body)))
	return sect(m, 10, append(code, body...))
}

// Class 8: compilation has a budget. 100,000 nested blocks and a 12 MB
// function are refused, naming the limit, the value and the function,
// before wazero sees them; a compile past its time budget fails at the
// budget; a bystander compiles and runs all along.
func TestHostileCompileBudget(t *testing.T) {
	const depth = 80_000 // 240 KB: within the body size budget
	nested := append(bytes.Repeat([]byte{0x02, 0x40}, depth), bytes.Repeat([]byte{0x0b}, depth)...)
	big := bytes.Repeat([]byte{0x01}, 12_000_000)
	snap := writePlugins(t,
		spec{name: "nested", module: oneFunctionModule(nested), tools: []string{"nested"}},
		spec{name: "big", module: oneFunctionModule(big), tools: []string{"big"}},
		bystanderSpec(t))
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	stop := bystander(t, h, snap)
	for tool, want := range map[string]string{
		"nested": "over the compile budget: function 0: control nesting depth is 2049, over the limit of 2048",
		"big":    "over the compile budget: function 0: body size in bytes is 12000002, over the limit of 262144",
	} {
		took, err := timedCall(t, h, snap, tool)
		t.Logf("%s: %s, %v", tool, took, err)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tool, err, want)
		}
	}
	checkBystander(t, stop, false)

	// The time budget: a real plugin (a Go module, not in any cache)
	// against a budget far below its compile time.
	snap = writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: []string{"ok"}})
	h2, _ := newHost(t, &wasm.Options{CacheDir: "off", Caps: wasm.Caps{CompileTimeout: 20 * time.Millisecond}})
	took, err := timedCall(t, h2, snap, "ok")
	if err == nil || !strings.Contains(err.Error(), "compilation went over its time budget of 20ms") {
		t.Errorf("compile time budget: err = %v", err)
	}
	t.Logf("compile time budget: refused after %s", took)
}

// Class 10: log and artifact floods stop at the quotas.
func TestHostileQuotas(t *testing.T) {
	flood := wat(t, "flood")
	snap := writePlugins(t, spec{name: "flood", module: flood, tools: []string{"logs", "artifacts"},
		caps: `{"log": true, "artifacts": true}`, limits: `{"timeout_ms": 30000}`})
	dir := t.TempDir()
	h, logs := newHost(t, &wasm.Options{Caps: wasm.Caps{MaxArtifactMB: 2},
		Grants: map[string]wasm.Grants{"flood": {Log: true, Artifacts: dir}}})
	s := h.NewSession()
	defer s.Close(context.Background())
	start := time.Now()
	if _, err := call(t, s, snap, "logs", `{}`); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(logs.String(), `msg="plugin log"`)
	t.Logf("log flood: %d messages logged in %s", lines, time.Since(start))
	if lines != wasm.DefaultMaxLogKB<<10/4000 { // 4,000-byte messages in 64 KiB
		t.Errorf("%d log messages got through; want %d", lines, wasm.DefaultMaxLogKB<<10/4000)
	}
	files := func() (n int, size int64) {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			info, _ := e.Info()
			n, size = n+1, size+info.Size()
		}
		return n, size
	}
	// 576 KiB each: 3 fit in the 2 MiB of a call, 14 in the 8 MiB of a
	// session (SessionQuotaCalls calls' worth).
	var lastN int
	var lastSize int64
	for i := 1; i <= wasm.SessionQuotaCalls+1; i++ {
		start := time.Now()
		if _, err := call(t, s, snap, "artifacts", `{}`); err != nil {
			t.Fatal(err)
		}
		n, size := files()
		t.Logf("artifact flood, call %d: %d files, %d bytes in all, %s", i, n, size, time.Since(start))
		if n-lastN > 3 || size-lastSize > 2<<20 || size > wasm.SessionQuotaCalls*2<<20 {
			t.Errorf("call %d: %d artifacts, %d bytes in all; want at most 3 and 2 MiB a call, 8 MiB a session", i, n, size)
		}
		lastN, lastSize = n, size
	}
	if lastN != 14 {
		t.Errorf("%d artifacts stored in the session; want 14", lastN)
	}
}

// Class 11 (mounts): a FIFO, a socket or a device in a mount is refused
// at once, not read until the deadline.
func TestHostileMountFIFO(t *testing.T) {
	mount := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(mount, "pipe.json"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	os.Symlink("/dev/zero", filepath.Join(mount, "zero"))
	manifest := filepath.Join(t.TempDir(), "caps.json")
	os.WriteFile(manifest, []byte(`{"name": "caps", "version": "1.0.0", "abi_version": 1, "wasm": "caps.wasm", "sha256": "`+strings.Repeat("0", 64)+`",
		"limits": {"timeout_ms": 3000}, "capabilities": {"mounts": ["m"]}, "tools": [`+toolList("read")+`]}`), 0o644)
	p := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest,
		Grants: wasm.Grants{Mounts: map[string]string{"m": mount}}})
	// The outcome tells a refusal from a blocked read: a read of the FIFO
	// would end in the 3 s timeout, a host error, not this tool error. (The
	// time includes the module's first compile: logged, not asserted.)
	start := time.Now()
	res, err := p.CallErr("read", json.RawMessage(`{"mount": "m", "path": "pipe.json"}`))
	took := time.Since(start)
	t.Logf("FIFO: %s, %+v, %v", took, res, err)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "pipe.json is not a regular file (a named pipe)") {
		t.Errorf("FIFO: %+v, %v", res, err)
	}
}

// Operator ceilings: with no caps set, a manifest asking 300 s and 4 GiB
// gets the default ceilings, with a warning for each.
func TestCeilings(t *testing.T) {
	snap := writePlugins(t, spec{name: "greedy", module: wat(t, "sleep"), tools: []string{"sleep"},
		limits: `{"timeout_ms": 300000, "max_memory_mb": 4096, "max_output_kb": 16384}`})
	h, logs := newHost(t, nil)
	if _, err := h.Plugin(snap.Plugins[0]); err != nil {
		t.Fatal(err)
	}
	l := logs.String()
	for _, want := range []string{"limit=timeout_ms asked=300000 ceiling=60000", "limit=max_memory_mb asked=4096 ceiling=256",
		"limit=max_output_kb asked=16384 ceiling=4096", "timeout=1m0s max_memory_mb=256 max_output_kb=4096"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s", want, l)
		}
	}
	// The ceiling holds: a 60 s sleep under a 1 s ceiling.
	h2, _ := newHost(t, &wasm.Options{Caps: wasm.Caps{Timeout: time.Second}})
	if took, err := timedCall(t, h2, snap, "sleep"); err == nil || took > time.Second+slack {
		t.Errorf("sleep under a 1 s ceiling: %s, %v", took, err)
	}
}

// Grant pins: grants pinned to another sha256 are not given.
func TestGrantPin(t *testing.T) {
	flood := wat(t, "flood")
	sum := sha256.Sum256(flood)
	right := hex.EncodeToString(sum[:])
	snap := writePlugins(t, spec{name: "flood", module: flood, tools: []string{"logs"}, caps: `{"log": true}`})
	for _, pin := range []string{strings.ToUpper(right), strings.Repeat("ab", 32)} {
		h, logs := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"flood": {Log: true, SHA256: pin}}})
		if _, err := timedCall(t, h, snap, "logs"); err != nil {
			t.Fatal(err)
		}
		l := logs.String()
		granted := strings.Contains(l, `msg="plugin log"`)
		warned := strings.Contains(l, "pinned_sha256="+strings.ToLower(pin)+" module_sha256="+right)
		if pin == strings.ToUpper(right) && (!granted || warned) || pin != strings.ToUpper(right) && (granted || !warned) {
			t.Errorf("pin %s: granted=%v warned=%v\n%s", pin, granted, warned, l)
		}
	}
}

// Class 6 and 9, host memory: each attack runs in a child process (this
// test binary again), which reports how far its RSS peaked (VmHWM, reset
// just before the call) above its RSS before the call; a harmless call
// of the same plugin is the baseline.
func TestHostileRSS(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("child processes; the race detector's shadow memory would swamp the figures")
	}
	wat(t, "memory") // skips here when wat2wasm is missing
	cases := []struct {
		name  string
		bound int64 // MiB over the baseline child
	}{
		// Linear memory grown page by page to its 64 MiB cap, every page
		// written: the cap plus slack for the GC's pacing.
		{"memory", 64 + 40},
		// The engine's call stack grows by doubling to wazero 1.12's
		// fixed ceiling (callStackCeiling, 50 MB: the last stack is
		// ~84 MB and the one before ~42 MB while it is copied).
		{"recursion", 200},
		// A table within the element budget grown to its maximum.
		{"table", 8 + 40},
	}
	base := childRSS(t, "memory", "ok")
	t.Logf("a harmless call: peak RSS +%.1f MiB", float64(base)/(1<<20))
	for _, c := range cases {
		grew := childRSS(t, c.name, "attack")
		t.Logf("%s: peak RSS +%.1f MiB during the call (bound +%d MiB)", c.name, float64(grew)/(1<<20), c.bound)
		if grew-base > c.bound<<20 {
			t.Errorf("%s: peak RSS grew %.1f MiB during the call; bound %d MiB", c.name, float64(grew)/(1<<20), c.bound)
		}
	}
}

// childRSS runs TestHostileChild for module NAME, tool "ok" or "attack",
// and returns its peak RSS in bytes.
func childRSS(t *testing.T, name, tool string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "TOOLSHED_HOSTILE_CHILD="+name+":"+tool)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	if !bytes.Contains(out, []byte("CHILD-DONE")) {
		t.Fatalf("child %s did not finish:\n%s", name, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CHILD-DONE") {
			t.Logf("child %s %s: %s", name, tool, strings.TrimSpace(line))
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		var grew int64
		if _, err := fmt.Sscanf(line, "CHILD-PEAK %d", &grew); err == nil {
			return grew
		}
	}
	t.Fatalf("child %s printed no peak:\n%s", name, out)
	return 0
}

// procStatus reads a field of /proc/self/status in bytes ("VmRSS").
func procStatus(field string) int64 {
	if b, ok := procmem.Self(field); ok {
		return b
	}
	return -1
}

// TestHostileChild is the child process of TestHostileRSS.
func TestHostileChild(t *testing.T) {
	env := os.Getenv("TOOLSHED_HOSTILE_CHILD")
	if env == "" {
		t.Skip("run by TestHostileRSS")
	}
	name, tool, _ := strings.Cut(env, ":")
	var code []byte
	switch name {
	case "table":
		code = wat(t, "table", "(table $t 1 funcref)", "(table $t 1 1048576 funcref)", "(i32.const 100000000)", "(i32.const 1048575)")
	default:
		code = wat(t, name)
	}
	snap := writePlugins(t, spec{name: name, module: code, tools: []string{"attack", "ok"},
		limits: `{"timeout_ms": 10000, "max_memory_mb": 64}`})
	h, _ := newHost(t, &wasm.Options{CacheDir: "off", PoolSize: -1})
	p, _ := h.Plugin(snap.Plugins[0])
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	// The peak is measured from here: "5" resets VmHWM to VmRSS. Where
	// that is not possible, the peak is the process's (maxrss), which
	// includes the catalog's load.
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	before := procStatus("VmRSS")
	start := time.Now()
	_, err := timedCall(t, h, snap, tool)
	fmt.Printf("CHILD-DONE %s %s in %s: %v\n", name, tool, time.Since(start).Round(time.Millisecond), firstLineOf(err))
	peak := procStatus("VmHWM")
	if !reset || before < 0 || peak < 0 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		before, peak = 0, ru.Maxrss<<10
	}
	fmt.Printf("CHILD-PEAK %d\n", peak-before)
}

func firstLineOf(err error) string {
	if err == nil {
		return "ok"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// busyWAT loops forever writing to its memory.
const busyWAT = `(module
  (memory (export "memory") 2)
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (local $i i32)
    (loop $l
      (i32.store (i32.and (local.get $i) (i32.const 0xfffc)) (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $l))
    (i64.const 0)))`

// Closing the host (a shutdown) or a plugin's runtime (a reload retiring
// it) while a call runs and writes to its memory: the memory stays mapped
// until the call has left the module, the call ends with an error, and
// the process lives on. Before the execGate, this faulted the host.
func TestCloseUnderRunningCall(t *testing.T) {
	snap := writePlugins(t, spec{name: "busy", module: wasmbuild.WAT(t, []byte(busyWAT)), tools: []string{"busy"},
		limits: `{"timeout_ms": 20000}`})
	tool, _ := snap.Tool("busy")
	for i := 0; i < 5; i++ {
		h, _ := newHost(t, &wasm.Options{PoolSize: -1})
		s := h.NewSession()
		done := make(chan error, 1)
		go func() {
			_, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
			done <- err
		}()
		time.Sleep(200 * time.Millisecond) // the call is in its loop
		start := time.Now()
		if err := h.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a call cut off by Close succeeded")
			}
			t.Logf("closed under a running call: %v after %s", err, time.Since(start))
		case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
			t.Fatal("the call did not end after Close")
		}
	}
}
