package wasm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// fixedPlugins are plugins named after their tools, each instance of which
// holds the given MiB from the start.
func fixedPlugins(t *testing.T, mibs map[string]int) *catalog.Snapshot {
	t.Helper()
	var specs []spec
	for name, n := range mibs {
		specs = append(specs, spec{name: name, module: wasmbuild.WAT(t, []byte(wasmbuild.FixedWAT(n))), tools: []string{name}})
	}
	return writePlugins(t, specs...)
}

// eventually fails the test unless cond holds within a generous deadline
// (a slow machine must pass): for states other goroutines reach.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after a minute: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callAsync calls tool in s on its own goroutine; the channel gets its
// error (or the result's text as one, for a tool error).
func callAsync(ctx context.Context, s *wasm.Session, snap *catalog.Snapshot, tool string) <-chan error {
	done := make(chan error, 1)
	tl, _ := snap.Tool(tool)
	go func() {
		res, err := s.Call(ctx, tl, nil)
		if err == nil && res.IsError {
			err = errors.New(res.Content)
		}
		done <- err
	}()
	return done
}

// result waits for a call started by callAsync (a minute at most: a
// hang is a failure, not a time asserted).
func result(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: no answer after a minute", what)
		return nil
	}
}

// holding is a host with a budget of 48 MiB and the given wait, whose
// session a holds a 32 MiB instance of "fixed"; b holds nothing yet (a
// second instance does not fit). The host closes with the test.
func holding(t *testing.T, wait time.Duration) (h *wasm.Host, snap *catalog.Snapshot, a, b *wasm.Session) {
	t.Helper()
	snap = fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ = newHost(t, &wasm.Options{MemoryBudget: 48 << 20, MemoryWait: wait, PoolSize: -1, ReclaimIdle: -1})
	a, b = h.NewSession(), h.NewSession()
	if res, err := call(t, a, snap, "fixed", `{}`); err != nil || res.IsError {
		t.Fatalf("first session: %v %+v", err, res)
	}
	return h, snap, a, b
}

// TestMemoryWaitOff: without Options.MemoryWait, a new instance that
// finds no room is refused at once (nothing waits), naming the budget.
func TestMemoryWaitOff(t *testing.T) {
	h, snap, a, b := holding(t, 0)
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	_, err := call(t, b, snap, "fixed", `{}`)
	refusedByBudget(t, err, false)
	if strings.Contains(err.Error(), "waiting") {
		t.Errorf("refused at once, but the error says it waited: %v", err)
	}
	if st := h.MemoryStats(); st.Waits.Started != 0 || st.Wait != 0 || st.Used != 32<<20 {
		t.Fatalf("%+v", st)
	}
}

// TestMemoryWaitServed: with a wait, the second session's call waits for
// room and is served once the first session closes.
func TestMemoryWaitServed(t *testing.T) {
	h, snap, a, b := holding(t, time.Minute)
	defer b.Close(context.Background())
	done := callAsync(context.Background(), b, snap, "fixed")
	eventually(t, "the second call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	select {
	case err := <-done:
		t.Fatalf("the second call returned (%v) with no room released", err)
	default:
	}
	a.Close(context.Background())
	if err := result(t, done, "the waiting call"); err != nil {
		t.Fatalf("the waiting call, after the first session closed: %v", err)
	}
	st := h.MemoryStats()
	if st.Waits.Started != 1 || st.Waits.Served != 1 || st.Waits.Waiting != 0 || st.Used != 32<<20 || st.Waits.Waited <= 0 {
		t.Fatalf("%+v", st)
	}
}

// TestMemoryWaitTenantShare: a session waits for room in its key's share
// (through the pool: a pooled instance taken by the session waits to be
// charged to the share), while another key's session is served meanwhile,
// not held back by it.
func TestMemoryWaitTenantShare(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 512 << 20, TenantMemory: 40 << 20, MemoryWait: time.Minute, ReclaimIdle: -1})
	a1, a2, b := h.NewTenantSession("a"), h.NewTenantSession("a"), h.NewTenantSession("b")
	defer a2.Close(context.Background())
	defer b.Close(context.Background())
	if res, err := call(t, a1, snap, "fixed", `{}`); err != nil || res.IsError {
		t.Fatalf("a1: %v %+v", err, res)
	}
	done := callAsync(context.Background(), a2, snap, "fixed")
	eventually(t, "a2 waits for key a's share", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	if err := result(t, callAsync(context.Background(), b, snap, "fixed"), "key b"); err != nil {
		t.Fatalf("key b, while a2 waits: %v", err)
	}
	a1.Close(context.Background())
	if err := result(t, done, "a2"); err != nil {
		t.Fatalf("a2 after a1 closed: %v", err)
	}
	if st := h.MemoryStats(); st.ByTenant["a"] != 32<<20 || st.ByTenant["b"] != 32<<20 || st.Waits.Served != 1 {
		t.Fatalf("%+v", st)
	}
}

// TestMemoryWaitExpires: with nothing released, the wait ends and the
// error names the budget and the wait; nothing is left charged for it.
func TestMemoryWaitExpires(t *testing.T) {
	h, snap, a, b := holding(t, 200*time.Millisecond)
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	_, err := call(t, b, snap, "fixed", `{}`)
	refusedByBudget(t, err, false)
	var be *wasm.BudgetError
	if errors.As(err, &be); be.Waited <= 0 || !strings.Contains(err.Error(), "after waiting") {
		t.Fatalf("the error does not say it waited: %v", err)
	}
	st := h.MemoryStats()
	if st.Waits.Started != 1 || st.Waits.TimedOut != 1 || st.Waits.Waiting != 0 || st.Used != 32<<20 || st.Refused != 1 {
		t.Fatalf("%+v", st)
	}
}

// TestMemoryWaitCancel: a call whose context ends while it waits returns
// the context's error, and leaves nothing charged: once room is released
// the session's next call fits.
func TestMemoryWaitCancel(t *testing.T) {
	h, snap, a, b := holding(t, time.Minute)
	defer b.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := callAsync(ctx, b, snap, "fixed")
	eventually(t, "the second call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	cancel()
	if err := result(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call: %v, want the context's error", err)
	}
	if st := h.MemoryStats(); st.Used != 32<<20 || st.Waits.Cancelled != 1 || st.Waits.Waiting != 0 || st.Refused != 0 {
		t.Fatalf("after the cancel: %+v", st)
	}
	a.Close(context.Background())
	if res, err := call(t, b, snap, "fixed", `{}`); err != nil || res.IsError {
		t.Fatalf("after the first session closed: %v %+v", err, res)
	}
	b.Close(context.Background())
	if st := h.MemoryStats(); st.Used != 0 {
		t.Fatalf("every session closed: %+v", st)
	}
}

// TestMemoryWaitOrder: waits are served in arrival order: a small
// request that would fit is held back behind a larger one that came
// first, and both are served once room is released.
func TestMemoryWaitOrder(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"big": 48, "small": 16})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 64 << 20, MemoryWait: time.Minute, PoolSize: -1, ReclaimIdle: -1})
	hog, big, small := h.NewSession(), h.NewSession(), h.NewSession()
	defer big.Close(context.Background())
	defer small.Close(context.Background())
	if res, err := call(t, hog, snap, "big", `{}`); err != nil || res.IsError {
		t.Fatalf("hog: %v %+v", err, res)
	}
	bigDone := callAsync(context.Background(), big, snap, "big")
	eventually(t, "the big call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	smallDone := callAsync(context.Background(), small, snap, "small") // 16 MiB are free
	eventually(t, "the small call waits behind it", func() bool { return h.MemoryStats().Waits.Waiting == 2 })
	hog.Close(context.Background())
	for what, done := range map[string]<-chan error{"big": bigDone, "small": smallDone} {
		if err := result(t, done, what); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if st := h.MemoryStats(); st.Used != 64<<20 || st.Waits.Served != 2 {
		t.Fatalf("%+v", st)
	}
}

// TestMemoryWaitMany: eight sessions, room for two: every call is served
// as earlier sessions close, none is lost, the budget is never passed and
// everything is given back (run with -race).
func TestMemoryWaitMany(t *testing.T) {
	const n = 8
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 80 << 20, MemoryWait: time.Minute, PoolSize: -1, ReclaimIdle: -1})
	tl, _ := snap.Tool("fixed")
	served := make(chan *wasm.Session, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			s := h.NewSession()
			res, err := s.Call(context.Background(), tl, nil)
			if err == nil && res.IsError {
				err = errors.New(res.Content)
			}
			if err != nil {
				s.Close(context.Background())
				errs <- err
				return
			}
			served <- s
		}()
	}
	for i := range n {
		select {
		case s := <-served:
			if st := h.MemoryStats(); st.Used > st.Budget {
				t.Fatalf("the budget was passed: %+v", st)
			}
			if i == 0 {
				eventually(t, "two are served and the other six wait", func() bool { return h.MemoryStats().Waits.Waiting == n-2 })
			}
			s.Close(context.Background())
		case err := <-errs:
			t.Fatalf("call %d: %v", i, err)
		case <-time.After(time.Minute):
			t.Fatalf("%d calls of %d served; no more after a minute: %+v", i, n, h.MemoryStats())
		}
	}
	st := h.MemoryStats()
	if st.Used != 0 || len(st.ByTenant) != 0 || st.Waits.Waiting != 0 || st.Waits.Started < n-2 ||
		st.Waits.Served != st.Waits.Started || st.Waits.TimedOut != 0 || st.Refused != 0 {
		t.Fatalf("at the end: %+v", st)
	}
}

// TestMemoryWaitHostClose: closing the host ends the waits at once.
func TestMemoryWaitHostClose(t *testing.T) {
	h, snap, _, b := holding(t, wasm.MaxMemoryWait)
	done := callAsync(context.Background(), b, snap, "fixed")
	eventually(t, "the second call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	h.Close(context.Background())
	if err := result(t, done, "the waiting call"); err == nil || !strings.Contains(err.Error(), "host closed") {
		t.Fatalf("the waiting call as the host closed: %v", err)
	}
}

// TestMemoryWaitOption: a wait over MaxMemoryWait is refused.
func TestMemoryWaitOption(t *testing.T) {
	if _, err := wasm.New(&wasm.Options{CacheDir: "off", MemoryWait: wasm.MaxMemoryWait + time.Second}); err == nil ||
		!strings.Contains(err.Error(), "MemoryWait") {
		t.Fatalf("a wait over the maximum: %v", err)
	}
}

// TestMemoryWaitReclaimsFirst: with a wait, an idle session's instance is
// still reclaimed to make room before anything waits.
func TestMemoryWaitReclaimsFirst(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 48 << 20, MemoryWait: time.Minute, PoolSize: -1, ReclaimIdle: 1})
	idle, busy := h.NewSession(), h.NewSession()
	defer idle.Close(context.Background())
	defer busy.Close(context.Background())
	for _, s := range []*wasm.Session{idle, busy} {
		if res, err := call(t, s, snap, "fixed", `{}`); err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
	}
	if st := h.MemoryStats(); idle.Instances() != 0 || h.Stats().Reclaimed != 1 || st.Waits.Started != 0 || st.Used != 32<<20 {
		t.Fatalf("idle holds %d instances, %d reclaimed; %+v", idle.Instances(), h.Stats().Reclaimed, st)
	}
}

// TestMemoryWaitReclaimsIdle: an instance whose session turns idle for
// ReclaimIdle while a call waits for room is reclaimed for that call.
func TestMemoryWaitReclaimsIdle(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 48 << 20, MemoryWait: time.Minute, PoolSize: -1, ReclaimIdle: time.Second})
	idle, waiting := h.NewSession(), h.NewSession()
	defer idle.Close(context.Background())
	defer waiting.Close(context.Background())
	if res, err := call(t, idle, snap, "fixed", `{}`); err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	// Served either way: by the reclaim at arrival (a slow machine) or,
	// usually, by the one when idle's instance has been idle a second.
	if err := result(t, callAsync(context.Background(), waiting, snap, "fixed"), "the waiting call"); err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	if st := h.MemoryStats(); idle.Instances() != 0 || h.Stats().Reclaimed != 1 || st.Used != 32<<20 || st.Waits.TimedOut != 0 {
		t.Fatalf("idle holds %d instances, %d reclaimed; %+v", idle.Instances(), h.Stats().Reclaimed, st)
	}
	t.Logf("waits: %+v", h.MemoryStats().Waits)
}

// TestPrepareYieldsToCalls: an instance prepared ahead of any call (a
// discovery's Session.Prepare) takes only room there is: with none, the
// preparation neither waits nor reclaims, and is not counted as refused;
// and until its first call a prepared instance yields its room to another
// session's call, which reclaims it at once (ReclaimIdle is an hour
// here). The session whose instance went gets a new one at its call,
// waiting for room as any call does.
func TestPrepareYieldsToCalls(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	h, _ := newHost(t, &wasm.Options{MemoryBudget: 48 << 20, MemoryWait: time.Minute, PoolSize: -1, ReclaimIdle: time.Hour})
	a, b := h.NewSession(), h.NewSession()
	defer b.Close(context.Background())
	tl, _ := snap.Tool("fixed")
	b.Prepare(tl.Plugin)
	eventually(t, "b's prepared instance", func() bool { return b.Instances() == 1 })
	a.Prepare(tl.Plugin) // no room: not made, and nothing waits
	if err := result(t, callAsync(context.Background(), a, snap, "fixed"), "a's call"); err != nil {
		t.Fatalf("a's call, with b's instance prepared but never called: %v", err)
	}
	st := h.MemoryStats()
	if b.Instances() != 0 || a.Instances() != 1 || h.Stats().Reclaimed != 1 || st.Waits.Started != 0 || st.Refused != 0 || st.Used != 32<<20 {
		t.Fatalf("a holds %d, b %d instances; %d reclaimed; %+v", a.Instances(), b.Instances(), h.Stats().Reclaimed, st)
	}
	// b's call now waits for a's instance, which was called: not taken.
	done := callAsync(context.Background(), b, snap, "fixed")
	eventually(t, "b's call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	if a.Instances() != 1 || h.Stats().Reclaimed != 1 {
		t.Fatalf("a's called instance was reclaimed for b: a holds %d, %d reclaimed", a.Instances(), h.Stats().Reclaimed)
	}
	a.Close(context.Background())
	if err := result(t, done, "b's waiting call"); err != nil {
		t.Fatalf("b's call, after a closed: %v", err)
	}
}

// TestPreparedWhileCallWaits: a call that queues for room while another
// session's prepared instance is still being made (charged, but not yet
// held, so not reclaimable) is served once that instance lands: the
// landing reclaims for the queue. Without that, the call would wait its
// whole MemoryWait, since no release comes.
func TestPreparedWhileCallWaits(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	made, land := make(chan struct{}), make(chan struct{})
	var once sync.Once
	opts := &wasm.Options{MemoryBudget: 48 << 20, MemoryWait: wasm.MaxMemoryWait, PoolSize: -1, ReclaimIdle: time.Hour}
	wasm.SetPrepared(opts, func() {
		once.Do(func() { close(made) })
		<-land
	})
	h, _ := newHost(t, opts)
	a, b := h.NewSession(), h.NewSession()
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	tl, _ := snap.Tool("fixed")
	b.Prepare(tl.Plugin)
	<-made // b's instance holds 32 MiB and is no session's yet
	done := callAsync(context.Background(), a, snap, "fixed")
	eventually(t, "a's call waits", func() bool { return h.MemoryStats().Waits.Waiting == 1 })
	close(land)
	if err := result(t, done, "a's call"); err != nil {
		t.Fatalf("a's call, after b's prepared instance landed: %v", err)
	}
	st := h.MemoryStats()
	if a.Instances() != 1 || b.Instances() != 0 || h.Stats().Reclaimed != 1 || st.Refused != 0 || st.Waits.Served != 1 {
		t.Fatalf("a holds %d, b %d instances; %d reclaimed; %+v", a.Instances(), b.Instances(), h.Stats().Reclaimed, st)
	}
}

// TestPreparedRefusedKeepsPool: a preparation that finds no room in its
// tenant's share leaves the plugin's pooled instance in the pool (no call
// was refused), and counts no refusal.
func TestPreparedRefusedKeepsPool(t *testing.T) {
	snap := fixedPlugins(t, map[string]int{"fixed": 32})
	// Fresh instances: no snapshot capture, made in the background, adds
	// to the instantiations counted below.
	h, logs := newHost(t, &wasm.Options{MemoryBudget: 256 << 20, TenantMemory: 48 << 20, PoolSize: 1, ReclaimIdle: -1, FreshInstances: true})
	a, b := h.NewTenantSession("t"), h.NewTenantSession("t")
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	if res, err := call(t, a, snap, "fixed", `{}`); err != nil || res.IsError {
		t.Fatalf("a's call: %v %+v", err, res)
	}
	eventually(t, "the pool refilled", func() bool { return h.MemoryStats().Used == 64<<20 })
	before := h.Stats()
	tl, _ := snap.Tool("fixed")
	b.Prepare(tl.Plugin)
	eventually(t, "b's preparation ended", func() bool { return strings.Contains(logs.String(), "prepare failed") })
	st, after := h.MemoryStats(), h.Stats()
	if b.Instances() != 0 || st.Refused != 0 || st.Used != 64<<20 || after.Instantiations != before.Instantiations {
		t.Fatalf("b holds %d; %+v; instantiations %d → %d", b.Instances(), st, before.Instantiations, after.Instantiations)
	}
}
