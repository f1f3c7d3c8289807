package wasm

import (
	"errors"
	"fmt"
	"sync"
)

// ErrMemoryBudget is wrapped by every refusal of the plugin memory budget
// (Options.MemoryBudget, Options.TenantMemory): an instance that would
// pass it is not created, a linear memory that would pass it does not
// grow, and the call fails with a *BudgetError.
var ErrMemoryBudget = errors.New("plugin memory budget")

// BudgetError is a refusal of the plugin memory budget: the server's (all
// instances together) or one tenant's share of it.
type BudgetError struct {
	Tenant bool  // the tenant's share was reached, not the server's budget
	Limit  int64 // bytes: the budget or the share
	Used   int64 // bytes in use when the request came
	Asked  int64 // bytes the request needed
}

func (e *BudgetError) Error() string {
	if e.Tenant {
		return fmt.Sprintf("this API key is at its share of the server's plugin memory budget (%d MiB in use of %d MiB; %d MiB more were asked); "+
			"close sessions you no longer use, or try again later", e.Used>>20, e.Limit>>20, mib(e.Asked))
	}
	return fmt.Sprintf("the server is at its plugin memory budget (%d MiB in use of %d MiB; %d MiB more were asked); try again later",
		e.Used>>20, e.Limit>>20, mib(e.Asked))
}

func (e *BudgetError) Unwrap() error { return ErrMemoryBudget }

// mib rounds n bytes up to MiB.
func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// memBudget is the committed linear memory of every live instance of a
// Host, against its budget and each tenant's share. A zero limit is no
// limit. It is safe for concurrent use.
type memBudget struct {
	limit, perTenant int64
	// reclaim is asked to free at least need bytes (tenant "" for the
	// server's budget, else that tenant's instances only) before a
	// refusal; it must not be called with mu held.
	reclaim func(tenant string, need int64)

	mu       sync.Mutex
	used     int64
	byTenant map[string]int64
	refused  uint64
}

// charge takes n more bytes for an instance of tenant (assigned: the
// instance belongs to a session; pooled ones count for the server only).
// Over a limit it reclaims idle instances once and tries again.
func (b *memBudget) charge(tenant string, assigned, reclaim bool, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	err := b.tryCharge(tenant, assigned, n)
	var be *BudgetError
	if errors.As(err, &be) && reclaim && b.reclaim != nil {
		who := ""
		if be.Tenant {
			who = tenant
		}
		b.reclaim(who, be.Used+be.Asked-be.Limit)
		err = b.tryCharge(tenant, assigned, n)
	}
	if err != nil {
		b.mu.Lock()
		b.refused++
		b.mu.Unlock()
	}
	return err
}

func (b *memBudget) tryCharge(tenant string, assigned bool, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.used+n > b.limit {
		return &BudgetError{Limit: b.limit, Used: b.used, Asked: n}
	}
	shared := assigned && tenant != "" && b.perTenant > 0
	if shared && b.byTenant[tenant]+n > b.perTenant {
		return &BudgetError{Tenant: true, Limit: b.perTenant, Used: b.byTenant[tenant], Asked: n}
	}
	b.used += n
	if assigned {
		b.byTenant[tenant] += n
	}
	return nil
}

// assign moves n bytes of a pooled instance to tenant's share.
func (b *memBudget) assign(tenant string, n int64) error {
	if b == nil {
		return nil
	}
	try := func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if tenant != "" && b.perTenant > 0 && b.byTenant[tenant]+n > b.perTenant {
			return &BudgetError{Tenant: true, Limit: b.perTenant, Used: b.byTenant[tenant], Asked: n}
		}
		b.byTenant[tenant] += n
		return nil
	}
	err := try()
	if be := (*BudgetError)(nil); errors.As(err, &be) && b.reclaim != nil {
		b.reclaim(tenant, be.Used+be.Asked-be.Limit)
		err = try()
	}
	if err != nil {
		b.mu.Lock()
		b.refused++
		b.mu.Unlock()
	}
	return err
}

// force charges n bytes whatever the limits say.
func (b *memBudget) force(tenant string, assigned bool, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += n
	if assigned {
		b.byTenant[tenant] += n
	}
}

// release gives n bytes back.
func (b *memBudget) release(tenant string, assigned bool, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if assigned {
		if b.byTenant[tenant] -= n; b.byTenant[tenant] <= 0 {
			delete(b.byTenant, tenant)
		}
	}
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
// tenant.
func (b *memBudget) tenantAccount(tenant string) *memAccount {
	if b == nil {
		return nil
	}
	return &memAccount{b: b, tenant: tenant, assigned: true, reclaim: true}
}

// reserve charges the memory an instance is about to be made with, before
// it is made: wazero cannot be refused the first allocation.
func (a *memAccount) reserve(n int64) error {
	if a == nil {
		return nil
	}
	if !a.resize(n, false) {
		return a.takeRefusal()
	}
	return nil
}

// resize sets the account to size bytes; growth the budget refuses
// returns false (the memory does not grow), unless must. The budget is
// charged without a.mu held: making room may close other instances, and
// read their accounts. (An account is resized by one goroutine at a time:
// the one running its instance's code.)
func (a *memAccount) resize(size int64, must bool) bool {
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
		if err := a.b.charge(tenant, assigned, reclaim, d); err != nil {
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
// instance taken by a session.
func (a *memAccount) assign(tenant string) error {
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
	if err := a.b.assign(tenant, n); err != nil {
		return err
	}
	a.mu.Lock()
	a.tenant, a.assigned, a.reclaim = tenant, true, true
	a.mu.Unlock()
	return nil
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
}

// MemoryStats reports the plugin memory budget. Safe for concurrent use.
func (h *Host) MemoryStats() MemoryStats {
	b := h.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	st := MemoryStats{Budget: b.limit, PerTenant: b.perTenant, Used: b.used, Refused: b.refused, ByTenant: make(map[string]int64, len(b.byTenant))}
	for t, n := range b.byTenant {
		st.ByTenant[t] = n
	}
	return st
}
