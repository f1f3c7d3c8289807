package wasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrMemoryBudget is wrapped by every refusal of the plugin memory budget
// (Options.MemoryBudget, Options.TenantMemory): an instance that would
// pass it is not created (after waiting Options.MemoryWait for room, when
// set), a linear memory that would pass it does not grow, and the call
// fails with a *BudgetError.
var ErrMemoryBudget = errors.New("plugin memory budget")

// BudgetError is a refusal of the plugin memory budget: the server's (all
// instances together) or one tenant's share of it.
type BudgetError struct {
	Tenant bool  // the tenant's share was reached, not the server's budget
	Limit  int64 // bytes: the budget or the share
	Used   int64 // bytes in use when the request came (or when its wait ended)
	Asked  int64 // bytes the request needed
	// Waited is how long the request waited for room (Options.MemoryWait)
	// before it was refused; 0: it was refused at once.
	Waited time.Duration
}

func (e *BudgetError) Error() string {
	waited := ""
	if e.Waited > 0 {
		waited = " after waiting " + roundWait(e.Waited).String() + " for room"
	}
	if e.Tenant {
		return fmt.Sprintf("this API key is at its share of the server's plugin memory budget (%d MiB in use of %d MiB; %d MiB more were asked)%s; "+
			"close sessions you no longer use, or try again later", e.Used>>20, e.Limit>>20, mib(e.Asked), waited)
	}
	return fmt.Sprintf("the server is at its plugin memory budget (%d MiB in use of %d MiB; %d MiB more were asked)%s; try again later",
		e.Used>>20, e.Limit>>20, mib(e.Asked), waited)
}

func (e *BudgetError) Unwrap() error { return ErrMemoryBudget }

// mib rounds n bytes up to MiB.
func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// roundWait is a time waited as the model reads it: to the millisecond
// under a second, else to the tenth of a second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// memBudget is the committed linear memory of every live instance of a
// Host, against its budget and each tenant's share. A zero limit is no
// limit. It is safe for concurrent use.
//
// With a wait (Options.MemoryWait), a new instance that finds no room
// queues for it (budget_wait.go); growth never waits.
type memBudget struct {
	limit, perTenant int64
	wait             time.Duration // how long a new instance may wait for room; 0: none
	// reclaim is asked to free at least need bytes (tenant "" for the
	// server's budget, else that tenant's instances only) before a
	// refusal; it must not be called with mu held.
	reclaim func(tenant string, need int64)
	// nextIdle is when the next instance (of tenant; any for "") will
	// be idle long enough to be reclaimed; zero: none. Nil: never.
	nextIdle func(tenant string) time.Time
	// done is closed when the host closes: waiters give up.
	done     chan struct{}
	doneOnce sync.Once

	mu       sync.Mutex
	used     int64
	byTenant map[string]int64
	refused  uint64
	waiters  []*waiter // in arrival order (budget_wait.go)
	waits    WaitStats
}

func newMemBudget(limit, perTenant int64, wait time.Duration, reclaim func(string, int64)) *memBudget {
	return &memBudget{limit: max(limit, 0), perTenant: max(perTenant, 0), wait: max(wait, 0), reclaim: reclaim,
		byTenant: map[string]int64{}, done: make(chan struct{})}
}

// need is what one request asks of the budget: bytes of the server's
// budget (none when a pooled instance, already counted there, is taken by
// a session) and of its tenant's share (assigned: the instance belongs to
// a session; pooled ones count for the server only).
type need struct {
	tenant   string
	assigned bool
	server   int64
	share    int64
}

// newNeed is the need of n more bytes for an instance of tenant.
func newNeed(tenant string, assigned bool, n int64) need {
	nd := need{tenant: tenant, assigned: assigned, server: n}
	if assigned {
		nd.share = n
	}
	return nd
}

// fits reports whether nd fits the server's budget and the tenant's
// share as they stand. Called with mu held.
func (b *memBudget) fits(nd need) (server, share bool) {
	server = nd.server <= 0 || b.limit <= 0 || b.used+nd.server <= b.limit
	share = nd.share <= 0 || nd.tenant == "" || b.perTenant <= 0 || b.byTenant[nd.tenant]+nd.share <= b.perTenant
	return server, share
}

// refusal is the error for nd not served now: the server's budget when it
// does not fit there, else the tenant's share when not there; when it fits
// both but earlier requests wait ahead of it for the room, the server's
// budget (the tenant's share for a request of the share alone). Called
// with mu held.
func (b *memBudget) refusal(nd need) *BudgetError {
	server, share := b.fits(nd)
	usesShare := nd.share > 0 && nd.tenant != "" && b.perTenant > 0
	if !server || (share && (!usesShare || nd.server > 0)) {
		return &BudgetError{Limit: b.limit, Used: b.used, Asked: nd.server}
	}
	return &BudgetError{Tenant: true, Limit: b.perTenant, Used: b.byTenant[nd.tenant], Asked: nd.share}
}

// grant charges nd. Called with mu held.
func (b *memBudget) grant(nd need) {
	b.used += nd.server
	if nd.assigned && nd.share > 0 {
		b.byTenant[nd.tenant] += nd.share
	}
}

// charge takes n more bytes for an instance of tenant, as its memory
// grows: at once or not at all (growth never waits, whatever
// Options.MemoryWait says; docs/SECURITY.md says why). Over a limit it
// reclaims idle instances once and tries again (reclaim).
func (b *memBudget) charge(tenant string, assigned, reclaim bool, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	return b.take(nil, newNeed(tenant, assigned, n), reclaim)
}

// assign moves n bytes of a pooled instance to tenant's share: it waits
// for room there as a new instance does (take).
func (b *memBudget) assign(ctx context.Context, tenant string, n int64) error {
	if b == nil {
		return nil
	}
	return b.take(ctx, need{tenant: tenant, assigned: true, share: n}, true)
}

// force charges n bytes whatever the limits say.
func (b *memBudget) force(tenant string, assigned bool, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.grant(newNeed(tenant, assigned, n))
}

// release gives n bytes back, and serves the requests waiting for them.
func (b *memBudget) release(tenant string, assigned bool, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(newNeed(tenant, assigned, n))
}

// releaseLocked gives nd back. Called with mu held.
func (b *memBudget) releaseLocked(nd need) {
	b.used -= nd.server
	if nd.assigned && nd.share > 0 {
		if b.byTenant[nd.tenant] -= nd.share; b.byTenant[nd.tenant] <= 0 {
			delete(b.byTenant, nd.tenant)
		}
	}
	b.serve()
}

// memAccount is one instance's committed linear memory as charged to the
// budget. Its memory grows on the goroutine that runs the instance's code;
// assign runs under the instance's call lock; release when the memory is
// freed. It is safe for concurrent use.
type memAccount struct {
	b *memBudget

	mu       sync.Mutex
	tenant   string
	assigned bool  // belongs to a session (pooled ones do not)
	reclaim  bool  // a refusal first reclaims idle instances (not for pool refills)
	charged  int64 // bytes
	refusal  error // the last refused growth (*BudgetError), for the call's error
	freed    bool
	// side is what the instance holds outside its linear memory (the
	// Extism ABI's blocks and vars, extism.go), charged to the budget as
	// well; ceiling, when set, bounds linear memory and side together
	// (the plugin's memory limit), so that one cap covers both.
	side    int64
	ceiling int64
}

// newAccount is the account of an instance no session holds yet (a pool
// refill, a snapshot's capture); reclaim: whether making room for it may
// close idle instances.
func (b *memBudget) newAccount(reclaim bool) *memAccount {
	if b == nil {
		return nil
	}
	return &memAccount{b: b, reclaim: reclaim}
}

// tenantAccount is the account of an instance made for a session of
// tenant. For one made ahead of any call (ctx speculative: Prepare), its
// growth reclaims nothing until claim.
func (b *memBudget) tenantAccount(ctx context.Context, tenant string) *memAccount {
	if b == nil {
		return nil
	}
	return &memAccount{b: b, tenant: tenant, assigned: true, reclaim: !isSpeculative(ctx)}
}

// reserve charges the memory an instance is about to be made with, before
// it is made: wazero cannot be refused the first allocation. With a wait
// (Options.MemoryWait), an instance of a session (or a snapshot's
// capture) that finds no room waits for it until ctx ends; a pool
// refill does not.
func (a *memAccount) reserve(ctx context.Context, n int64) error {
	if a == nil {
		return nil
	}
	if !a.resizeCtx(ctx, n, false) {
		return a.takeRefusal()
	}
	return nil
}

// resize sets the account to size bytes, as the memory grows or shrinks;
// growth the budget refuses returns false (the memory does not grow),
// unless must. It never waits.
func (a *memAccount) resize(size int64, must bool) bool { return a.resizeCtx(nil, size, must) }

// resizeCtx is resize, waiting for room until ctx ends when ctx is not
// nil (reserve). The budget is charged without a.mu held: making room
// may close other instances, and read their accounts. (An account is
// resized by one goroutine at a time: the one running its instance's
// code.)
func (a *memAccount) resizeCtx(ctx context.Context, size int64, must bool) bool {
	if a == nil {
		return true
	}
	a.mu.Lock()
	if a.freed {
		a.refusal = errors.New("the instance's memory was released")
		a.mu.Unlock()
		return false
	}
	d, tenant, assigned, reclaim := size-a.charged, a.tenant, a.assigned, a.reclaim
	if a.ceiling > 0 && d > 0 && !must && size+a.side > a.ceiling {
		a.refusal = &CeilingError{Limit: a.ceiling, Linear: size, Side: a.side}
		a.mu.Unlock()
		return false
	}
	a.mu.Unlock()
	switch {
	case d > 0:
		if err := a.b.take(ctx, newNeed(tenant, assigned, d), reclaim); err != nil {
			if !must {
				a.mu.Lock()
				a.refusal = err
				a.mu.Unlock()
				return false
			}
			a.b.force(tenant, assigned, d) // the first allocation: charged whatever it costs
		}
	case d < 0:
		a.b.release(tenant, assigned, -d)
	}
	a.mu.Lock()
	a.charged += d
	a.mu.Unlock()
	return true
}

// assign charges the instance's memory to tenant's share: a pooled
// instance taken by a session. It waits for room there as reserve does.
func (a *memAccount) assign(ctx context.Context, tenant string) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	n, done := a.charged+a.side, a.assigned
	a.mu.Unlock()
	if done {
		return nil
	}
	// Not under a.mu (see resize); the instance is in no one's hands but
	// the caller's, so nothing resizes it meanwhile.
	if err := a.b.assign(ctx, tenant, n); err != nil {
		return err
	}
	a.mu.Lock()
	a.tenant, a.assigned, a.reclaim = tenant, true, !isSpeculative(ctx)
	a.mu.Unlock()
	return nil
}

// claim marks the account's instance as serving calls: its growth may
// reclaim idle instances from now on (a speculative one's did not).
func (a *memAccount) claim() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.reclaim = true
	a.mu.Unlock()
}

// free releases everything the account holds; later growth is refused.
func (a *memAccount) free() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.freed {
		a.b.release(a.tenant, a.assigned, a.charged+a.side)
		a.charged, a.side, a.freed = 0, 0, true
	}
}

// size is what the account holds, in bytes.
func (a *memAccount) size() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.charged + a.side
}

// owner is the tenant whose share the account is charged to.
func (a *memAccount) owner() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tenant
}

// takeRefusal returns and clears the last refused growth.
func (a *memAccount) takeRefusal() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.refusal
	a.refusal = nil
	return err
}

// MemoryStats are the plugin memory budget's figures.
type MemoryStats struct {
	Budget    int64            // bytes; 0: none
	PerTenant int64            // bytes; 0: no per-tenant share
	Used      int64            // committed linear memory of every live instance
	ByTenant  map[string]int64 // of Used, what sessions of each tenant hold
	Refused   uint64           // instances not made and growths refused, since New
	// Wait is Options.MemoryWait: how long a new instance may wait for
	// room; Waits what those waits came to, since New.
	Wait  time.Duration
	Waits WaitStats
}

// MemoryStats reports the plugin memory budget. Safe for concurrent use.
func (h *Host) MemoryStats() MemoryStats {
	b := h.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	st := MemoryStats{Budget: b.limit, PerTenant: b.perTenant, Used: b.used, Refused: b.refused, ByTenant: make(map[string]int64, len(b.byTenant)),
		Wait: b.wait, Waits: b.waits}
	st.Waits.Waiting = len(b.waiters)
	for t, n := range b.byTenant {
		st.ByTenant[t] = n
	}
	return st
}
