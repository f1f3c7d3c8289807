package wasm

import (
	"context"
	"slices"
	"time"
)

// defaultReclaimIdle is Options.ReclaimIdle's default.
const defaultReclaimIdle = time.Minute

// reclaim frees at least need bytes of the memory budget if it can,
// before a refusal: the pooled instances first (server budget only: they
// are no tenant's), then the instances of sessions idle at least
// Options.ReclaimIdle, least recently used first; for tenant != "" only
// that tenant's. An instance running a call is never taken. A session
// whose instance was reclaimed gets a new one at its next call to the
// plugin (the plugin's state in it is lost, as after a crash).
func (h *Host) reclaim(tenant string, need int64) {
	plugins := h.plugins()
	var freed int64
	var pooled []*instance
	type cand struct {
		in   *instance
		used int64
	}
	var idle []cand
	idleFor := h.reclaimIdle()
	cutoff := time.Now().Add(-idleFor).UnixNano()
	for _, p := range plugins {
		p.mu.Lock()
		if tenant == "" {
			pooled = append(pooled, p.pool...)
			p.pool = nil
		}
		for _, in := range p.byModule {
			if in.owner.Load() == nil || in.acct == nil || idleFor < 0 {
				continue
			}
			if used := in.lastUsed.Load(); used <= cutoff && (tenant == "" || in.acct.owner() == tenant) {
				idle = append(idle, cand{in, used})
			}
		}
		p.mu.Unlock()
	}
	for _, in := range pooled {
		freed += in.acct.size()
		in.close(context.Background())
	}
	slices.SortFunc(idle, func(a, b cand) int { return int(min(max(a.used-b.used, -1), 1)) })
	for _, c := range idle {
		if freed >= need {
			break
		}
		in := c.in
		if !in.mu.TryLock() {
			continue // a call runs on it: not idle after all
		}
		if in.dead || in.lastUsed.Load() != c.used {
			// Dead, or a call ran on it since it was picked (a call
			// marks lastUsed when it ends): not idle after all.
			in.mu.Unlock()
			continue
		}
		in.dead = true
		in.mu.Unlock()
		n := in.acct.size()
		in.owner.Load().forget(in.plugin, in)
		in.close(context.Background())
		freed += n
		h.stats.reclaimed.Add(1)
		h.log.Info("idle session's plugin instance reclaimed for the memory budget", "plugin", in.plugin.name, "memory_mb", n>>20)
	}
}

// plugins are the host's plugins now.
func (h *Host) plugins() []*Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	plugins := make([]*Plugin, 0, len(h.byKey))
	for _, p := range h.byKey {
		plugins = append(plugins, p)
	}
	return plugins
}

// reclaimIdle is Options.ReclaimIdle with its default.
func (h *Host) reclaimIdle() time.Duration {
	if h.opts.ReclaimIdle == 0 {
		return defaultReclaimIdle
	}
	return h.opts.ReclaimIdle
}

// nextIdle is when the next instance of a session (of tenant; of any for
// "") that is not idle for ReclaimIdle yet will be, unless a call of it
// comes first: a request waiting for room (budget_wait.go) reclaims again
// then. Zero when there is none, or ReclaimIdle is negative.
func (h *Host) nextIdle(tenant string) time.Time {
	idleFor := h.reclaimIdle()
	if idleFor < 0 {
		return time.Time{}
	}
	now, next := time.Now().UnixNano(), int64(0)
	for _, p := range h.plugins() {
		p.mu.Lock()
		for _, in := range p.byModule {
			if in.owner.Load() == nil || in.acct == nil || (tenant != "" && in.acct.owner() != tenant) {
				continue
			}
			if at := in.lastUsed.Load() + int64(idleFor); at > now && (next == 0 || at < next) {
				next = at
			}
		}
		p.mu.Unlock()
	}
	if next == 0 {
		return time.Time{}
	}
	return time.Unix(0, next)
}
