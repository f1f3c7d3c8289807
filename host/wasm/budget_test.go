package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// growWAT grows its memory by 16 MiB at each call and touches every page
// of it; a refused growth traps (as a Go plugin's runtime would die).
var growWAT = wasmbuild.GrowWAT(16)

func growPlugin(t *testing.T) *catalog.Snapshot {
	t.Helper()
	return writePlugins(t, spec{name: "grow", module: wasmbuild.WAT(t, []byte(growWAT)), tools: []string{"grow"}})
}

// grows calls grow n times in s and fails the test on any error.
func grows(t *testing.T, s *wasm.Session, snap *catalog.Snapshot, n int) {
	t.Helper()
	for i := range n {
		if res, err := call(t, s, snap, "grow", `{}`); err != nil || res.IsError {
			t.Fatalf("grow %d: %v %+v", i, err, res)
		}
	}
}

// refusedByBudget fails the test unless err is the memory budget's
// refusal, in words the model can read, of the kind wanted.
func refusedByBudget(t *testing.T, err error, tenant bool) {
	t.Helper()
	var be *wasm.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, wasm.ErrMemoryBudget) || be.Tenant != tenant ||
		!strings.Contains(err.Error(), "plugin memory budget") {
		t.Fatalf("want a refusal of the memory budget (tenant's share: %v), got %v", tenant, err)
	}
}

// TestMemoryBudget: the committed memory of every instance together
// stays under the budget, as instances grow; a call that would pass it
// fails at once naming it, nothing else is harmed, and the memory of
// closed sessions is given back.
func TestMemoryBudget(t *testing.T) {
	snap := growPlugin(t)
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 64 << 20, PoolSize: -1, ReclaimIdle: -1})
	a, b := h.NewSession(), h.NewSession()
	defer b.Close(context.Background())
	grows(t, a, snap, 3) // 48 MiB and a page
	if used := h.MemoryStats().Used; used < 48<<20 || used > 49<<20 {
		t.Fatalf("Used = %d after 48 MiB of growth", used)
	}
	_, err := call(t, b, snap, "grow", `{}`)
	refusedByBudget(t, err, false)
	if st := h.MemoryStats(); st.Used > st.Budget || st.Refused == 0 {
		t.Fatalf("after the refusal: %+v", st)
	}
	grows(t, a, snap, 0)
	if a.Instances() != 1 {
		t.Fatal("the session under the budget lost its instance")
	}
	a.Close(context.Background())
	grows(t, b, snap, 3) // room again
	b.Close(context.Background())
	if used := h.MemoryStats().Used; used != 0 {
		t.Fatalf("Used = %d with every session closed", used)
	}
}

// TestMemoryBudgetInstantiation: an instance whose starting memory would
// pass the budget is not made.
func TestMemoryBudgetInstantiation(t *testing.T) {
	snap := writePlugins(t, spec{name: "big", module: wasmbuild.WAT(t, []byte(strings.Replace(growWAT, "(memory (export \"memory\") 1)", "(memory (export \"memory\") 1024)", 1))),
		tools: []string{"big"}})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 32 << 20, PoolSize: -1})
	s := h.NewSession()
	defer s.Close(context.Background())
	_, err := call(t, s, snap, "big", `{}`)
	refusedByBudget(t, err, false)
	if st := h.MemoryStats(); st.Used != 0 {
		t.Fatalf("a refused instance left %d bytes charged", st.Used)
	}
}

// TestTenantMemoryShare: one tenant's sessions together stop at its
// share; another tenant still gets its own.
func TestTenantMemoryShare(t *testing.T) {
	snap := growPlugin(t)
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 128 << 20, TenantMemory: 40 << 20, ReclaimIdle: -1})
	a1, a2, b := h.NewTenantSession("a"), h.NewTenantSession("a"), h.NewTenantSession("b")
	for _, s := range []*wasm.Session{a1, a2, b} {
		defer s.Close(context.Background())
	}
	grows(t, a1, snap, 2) // 32 MiB
	_, err := call(t, a2, snap, "grow", `{}`)
	refusedByBudget(t, err, true)
	grows(t, b, snap, 2)
	st := h.MemoryStats()
	if st.ByTenant["a"] > 40<<20 || st.ByTenant["b"] < 32<<20 {
		t.Fatalf("by tenant: %v", st.ByTenant)
	}
}

// TestReclaimIdle: at the budget, the instance of a session idle past
// ReclaimIdle is closed to make room; that session's next call gets a new
// instance.
func TestReclaimIdle(t *testing.T) {
	snap := growPlugin(t)
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 40 << 20, PoolSize: -1, ReclaimIdle: 1})
	idle, busy := h.NewSession(), h.NewSession()
	defer idle.Close(context.Background())
	defer busy.Close(context.Background())
	grows(t, idle, snap, 2) // 32 MiB
	grows(t, busy, snap, 1) // 16 more: idle's instance goes
	if idle.Instances() != 0 || h.Stats().Reclaimed != 1 {
		t.Fatalf("idle session holds %d instances, %d reclaimed", idle.Instances(), h.Stats().Reclaimed)
	}
	grows(t, idle, snap, 1) // a new instance; busy's is now idle too
	if st := h.MemoryStats(); st.Used > st.Budget {
		t.Fatalf("%+v", st)
	}
}

// quotaCrashWAT stores 20 small artifacts at each call, then traps: every
// call ends on a new instance.
const quotaCrashWAT = `(module
  (import "toolshed" "host_call" (func $host (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (data (i32.const 80) "artifact.put")
  (data (i32.const 256) "{\"name\":\"a\",\"data\":\"QUFB\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (local $i i32)
    (loop $l
      (drop (call $host (i32.const 80) (i32.const 12) (i32.const 256) (i32.const 26)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 20))))
    unreachable))`

// TestQuotaSurvivesRestart: a plugin that dies after each call gets a
// new instance but not a new session quota.
func TestQuotaSurvivesRestart(t *testing.T) {
	snap := writePlugins(t, spec{name: "crash", module: wasmbuild.WAT(t, []byte(quotaCrashWAT)), tools: []string{"crash"},
		caps: `{"artifacts": true}`})
	dir := t.TempDir()
	h, _ := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"crash": {Artifacts: dir}}})
	s := h.NewSession()
	defer s.Close(context.Background())
	for range 2 * wasm.SessionQuotaCalls {
		if _, err := call(t, s, snap, "crash", `{}`); err == nil {
			t.Fatal("the call did not trap")
		}
	}
	es, _ := os.ReadDir(dir)
	if want := wasm.DefaultMaxArtifacts * wasm.SessionQuotaCalls; len(es) != want {
		t.Fatalf("%d artifacts stored by one session; want its quota, %d", len(es), want)
	}
}

// TestMemoryBudgetHammer: sessions of two tenants grow, get refused (or
// wait for room, with Options.MemoryWait), are reclaimed and close
// concurrently (run with -race); the budget is never passed and
// everything is given back.
func TestMemoryBudgetHammer(t *testing.T) {
	for _, wait := range []time.Duration{0, 50 * time.Millisecond} {
		t.Run(fmt.Sprintf("wait=%s", wait), func(t *testing.T) {
			hammerBudget(t, &wasm.Options{MemoryBudget: 64 << 20, TenantMemory: 40 << 20, ReclaimIdle: 1, MemoryWait: wait})
		})
	}
}

func hammerBudget(t *testing.T, opts *wasm.Options) {
	snap := growPlugin(t)
	h, _ := newHost(t, opts)
	stop := make(chan struct{})
	over := make(chan wasm.MemoryStats, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st := h.MemoryStats(); st.Used > st.Budget {
				select {
				case over <- st:
				default:
				}
			}
		}
	}()
	tl, _ := snap.Tool("grow")
	done := make(chan struct{})
	for w := range 6 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 4 {
				s := h.NewTenantSession([]string{"a", "b"}[w%2])
				for range 3 {
					_, err := s.Call(context.Background(), tl, nil)
					if err != nil && !errors.Is(err, wasm.ErrMemoryBudget) && !errors.Is(err, wasm.ErrDiscarded) {
						t.Errorf("call: %v", err)
					}
				}
				s.Close(context.Background())
			}
		}()
	}
	for range 6 {
		<-done
	}
	close(stop)
	select {
	case st := <-over:
		t.Fatalf("the budget was passed: %+v", st)
	default:
	}
	h.Close(context.Background())
	if st := h.MemoryStats(); st.Used != 0 || len(st.ByTenant) != 0 || st.Waits.Waiting != 0 {
		t.Fatalf("after every session and the host closed: %+v", st)
	}
}

// TestMemoryBudgetBeforeSnapshot: a Go plugin whose first instance (the
// snapshot's capture) finds no room is refused naming the budget, and
// is snapshotted once there is room: the refusal does not turn its
// snapshots off for good.
func TestMemoryBudgetBeforeSnapshot(t *testing.T) {
	snap := writePlugins(t, spec{name: "grow", module: wasmbuild.WAT(t, []byte(growWAT)), tools: []string{"grow"}},
		spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 49 << 20, PoolSize: -1, ReclaimIdle: -1})
	hog, s := h.NewSession(), h.NewSession()
	defer s.Close(context.Background())
	grows(t, hog, snap, 3) // 48 MiB and a page: under 1 MiB left
	_, err := call(t, s, snap, "ok", `{}`)
	refusedByBudget(t, err, false)
	hog.Close(context.Background())
	if res, err := call(t, s, snap, "ok", `{}`); err != nil || res.IsError {
		t.Fatalf("with room again: %v %+v", err, res)
	}
	if st := h.Stats(); snapshotsOn() && (st.Snapshots != 1 || st.SnapshotFailures != 0) {
		t.Fatalf("snapshots %d, failures %d: the refusal turned them off", st.Snapshots, st.SnapshotFailures)
	}
}

// TestReclaimTenantOwn: a tenant at its share makes room from its own
// idle sessions only; another tenant's idle instance is left alone.
func TestReclaimTenantOwn(t *testing.T) {
	snap := growPlugin(t)
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 256 << 20, TenantMemory: 40 << 20, PoolSize: -1, ReclaimIdle: 1})
	a1, a2, b := h.NewTenantSession("a"), h.NewTenantSession("a"), h.NewTenantSession("b")
	for _, s := range []*wasm.Session{a1, a2, b} {
		defer s.Close(context.Background())
	}
	grows(t, b, snap, 2)  // b: 32 MiB, idle from now on
	grows(t, a1, snap, 2) // a: 32 MiB, idle from now on
	grows(t, a2, snap, 1) // a: 16 more, over its 40: a1's instance goes, not b's
	if a1.Instances() != 0 || b.Instances() != 1 || h.Stats().Reclaimed != 1 {
		t.Fatalf("a1 holds %d, b holds %d instances; %d reclaimed", a1.Instances(), b.Instances(), h.Stats().Reclaimed)
	}
	if st := h.MemoryStats(); st.ByTenant["a"] > 40<<20 || st.ByTenant["b"] < 32<<20 {
		t.Fatalf("by tenant: %v", st.ByTenant)
	}
}
