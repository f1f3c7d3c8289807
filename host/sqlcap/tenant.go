package sqlcap

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// tenantSlots bounds how many of one database's query slots each tenant
// holds at once, so that one tenant's slow queries cannot take them all.
// The tenant "" (a server without API keys) is not bounded. It is safe
// for concurrent use.
type tenantSlots struct {
	per int

	mu   sync.Mutex
	held map[string]int
	wake chan struct{} // closed (and replaced) when a slot is released
}

func newTenantSlots(per int) *tenantSlots {
	return &tenantSlots{per: per, held: map[string]int{}, wake: make(chan struct{})}
}

// acquire waits for one of tenant's slots until ctx ends.
func (ts *tenantSlots) acquire(ctx context.Context, tenant string) error {
	if tenant == "" {
		return nil
	}
	for {
		ts.mu.Lock()
		if ts.held[tenant] < ts.per {
			ts.held[tenant]++
			ts.mu.Unlock()
			return nil
		}
		wake := ts.wake
		ts.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (ts *tenantSlots) release(tenant string) {
	if tenant == "" {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.held[tenant]--; ts.held[tenant] <= 0 {
		delete(ts.held, tenant)
	}
	close(ts.wake)
	ts.wake = make(chan struct{})
}

// busy reports how many slots each tenant holds, for metrics.
func (ts *tenantSlots) busy() map[string]int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make(map[string]int, len(ts.held))
	for t, n := range ts.held {
		out[t] = n
	}
	return out
}

// SlotUse is what one tenant holds of one database's query slots.
type SlotUse struct {
	Database, Tenant string
	Busy             int // queries of the tenant running or about to
}

// TenantSlots reports, by database then tenant (sorted), the slots each
// tenant holds now, and the share each may hold (Options.TenantSlots).
// Safe for concurrent use.
func (s *Service) TenantSlots() (use []SlotUse, share int) {
	for _, db := range s.Databases() {
		busy := s.tenants[db].busy()
		for _, t := range slices.Sorted(maps.Keys(busy)) {
			use = append(use, SlotUse{Database: db, Tenant: t, Busy: busy[t]})
		}
	}
	return use, s.opts.TenantSlots
}
