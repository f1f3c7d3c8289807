package wasm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxMemoryWait bounds Options.MemoryWait: a call should not hang on the
// budget for longer than a client would wait for it.
const MaxMemoryWait = 5 * time.Minute

// WaitStats are the waits for room in the plugin memory budget
// (Options.MemoryWait), since New.
type WaitStats struct {
	Started   uint64        // requests that found no room and waited
	Served    uint64        // waits that ended with the room
	TimedOut  uint64        // waits that ended with the wait elapsed: refused
	Cancelled uint64        // waits whose call's context ended, or whose host closed
	Waited    time.Duration // all the waits together
	Waiting   int           // requests waiting now
}

// errHostClosed ends the waits of a host that closes.
var errHostClosed = errors.New("wasm: the host closed while the call waited for room in the plugin memory budget")

// waiter is one request waiting for room in the budget.
type waiter struct {
	need
	ready  chan struct{} // closed when served
	served bool          // under memBudget.mu
}

// take charges nd: at once when it fits; else (reclaim) after idle
// instances were reclaimed to make room; else, with a wait
// (Options.MemoryWait) for a request that may reclaim, once room is
// released, until ctx ends, the host closes or the wait elapses. With a
// wait, requests are served in arrival order (serve), and a request that
// may not wait (a pool refill) does not pass the ones that do. ctx nil is
// growth: it never queues, and takes what fits.
func (b *memBudget) take(ctx context.Context, nd need, reclaim bool) error {
	spec := isSpeculative(ctx)
	if spec {
		reclaim = false // it waits and reclaims for no one: like a refill
	}
	queued := ctx != nil && b.wait > 0
	w := &waiter{need: nd}
	b.mu.Lock()
	never := (nd.server > 0 && b.limit > 0 && nd.server > b.limit) ||
		(nd.share > 0 && nd.tenant != "" && b.perTenant > 0 && nd.share > b.perTenant)
	switch {
	case never:
		// More than the whole budget or share: no wait would help, and
		// it would hold every later request back.
		if !spec {
			b.refused++
		}
		err := b.refusal(nd)
		b.mu.Unlock()
		return err
	case queued:
		w.ready = make(chan struct{})
		b.waiters = append(b.waiters, w)
		b.serve()
	default:
		if server, share := b.fits(nd); server && share {
			b.grant(nd)
			w.served = true
		}
	}
	var be *BudgetError
	var short int64
	if !w.served {
		be = b.refusal(nd)
		short = b.shortfall(be, w)
	}
	b.mu.Unlock()
	if be == nil {
		return nil
	}
	if reclaim && b.reclaim != nil {
		who := ""
		if be.Tenant {
			who = nd.tenant
		}
		b.reclaim(who, short) // its releases serve the queue
		b.mu.Lock()
		if server, share := b.fits(nd); !queued && server && share {
			b.grant(nd)
			w.served = true
		}
		served := w.served
		b.mu.Unlock()
		if served {
			return nil
		}
	}
	if queued && reclaim {
		return b.await(ctx, w)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.served {
		return nil
	}
	if queued {
		b.dequeue(w)
	}
	if !spec { // a preparation not made is no request refused
		b.refused++
	}
	return b.refusal(nd)
}

// speculativeKey marks the context of an instance made ahead of any call
// (Session.Prepare).
type speculativeKey struct{}

// speculative returns ctx marked so that the instance made under it takes
// room only where there is some now, in arrival order: it neither waits
// for room nor reclaims other instances, and is not counted as refused.
// Until its first call such an instance is itself reclaimable at once
// (Session.instance), so it never holds room a real call needs.
func speculative(ctx context.Context) context.Context {
	return context.WithValue(ctx, speculativeKey{}, true)
}

func isSpeculative(ctx context.Context) bool { return ctx != nil && ctx.Value(speculativeKey{}) != nil }

// kick reclaims for the requests waiting now, one after the other until
// the queue is served or nothing more can be freed for it: an instance
// that became reclaimable (a prepared one, now held by its session) may
// make their room, and no release would tell them. It must not be called
// with mu held.
func (b *memBudget) kick() {
	if b == nil || b.reclaim == nil {
		return
	}
	b.mu.Lock()
	queue := slices.Clone(b.waiters)
	b.mu.Unlock()
	for _, w := range queue {
		b.reclaimFor(w) // nothing for a waiter served meanwhile
	}
}

// shortfall is how many bytes must be freed for self, refused with be,
// and for every other request queued for the same room (the server's
// budget, or self's tenant's share) to fit. Called with mu held.
func (b *memBudget) shortfall(be *BudgetError, self *waiter) int64 {
	n := be.Used + be.Asked - be.Limit
	for _, w := range b.waiters {
		switch {
		case w == self:
		case be.Tenant && w.tenant == self.tenant:
			n += w.share
		case !be.Tenant:
			n += w.server
		}
	}
	return n
}

// await waits until w is served, ctx ends, the host closes or the wait
// elapses. A request served as it gives up gives its room back.
func (b *memBudget) await(ctx context.Context, w *waiter) error {
	start := time.Now()
	b.mu.Lock()
	if w.served {
		b.mu.Unlock()
		return nil
	}
	b.waits.Started++
	b.mu.Unlock()
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	var gaveUp error
	// An instance that turns idle for Options.ReclaimIdle while w waits
	// is reclaimed then (reclaimAt), not at the next arrival only.
	var again *time.Timer
	defer func() {
		if again != nil {
			again.Stop()
		}
	}()
wait:
	for {
		var reclaimAt <-chan time.Time
		if at := b.nextReclaim(w); !at.IsZero() {
			if again == nil {
				again = time.NewTimer(time.Until(at))
			} else {
				again.Reset(time.Until(at))
			}
			reclaimAt = again.C
		}
		select {
		case <-w.ready:
			break wait
		case <-timer.C:
			break wait
		case <-ctx.Done():
			gaveUp = fmt.Errorf("waiting for room in the plugin memory budget: %w", ctx.Err())
			break wait
		case <-b.done:
			gaveUp = errHostClosed
			break wait
		case <-reclaimAt:
			b.reclaimFor(w)
		}
	}
	waited := time.Since(start)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waits.Waited += waited
	switch {
	case w.served && gaveUp == nil:
		b.waits.Served++
		return nil
	case w.served:
		b.releaseLocked(w.need) // to the next in line
	default:
		b.dequeue(w)
	}
	if gaveUp != nil {
		b.waits.Cancelled++
		return gaveUp
	}
	b.waits.TimedOut++
	b.refused++
	be := b.refusal(w.need)
	be.Waited = waited
	return be
}

// nextReclaim is when an instance will have been idle long enough to be
// reclaimed for w; zero for never (or w is served).
func (b *memBudget) nextReclaim(w *waiter) time.Time {
	if b.nextIdle == nil || b.reclaim == nil {
		return time.Time{}
	}
	b.mu.Lock()
	who, served := b.whose(w), w.served
	b.mu.Unlock()
	if served {
		return time.Time{}
	}
	return b.nextIdle(who)
}

// reclaimFor reclaims idle instances for w, still waiting, and for the
// requests queued with it.
func (b *memBudget) reclaimFor(w *waiter) {
	b.mu.Lock()
	if w.served {
		b.mu.Unlock()
		return
	}
	be := b.refusal(w.need)
	short, who := b.shortfall(be, w), b.whose(w)
	b.mu.Unlock()
	b.reclaim(who, short)
}

// whose is the tenant whose instances may be reclaimed for w: its own
// when its tenant's share keeps it waiting, else anyone's ("").
func (b *memBudget) whose(w *waiter) string {
	if b.refusal(w.need).Tenant {
		return w.tenant
	}
	return ""
}

// serve grants the waiting requests that fit, in arrival order. A request
// is served when it fits and no earlier request still waits for the same
// room (the server's budget; its tenant's share), so that a large request
// is not passed for ever by small ones; one that waits for its tenant's
// share holds back only that tenant's later requests (no other tenant's
// release could serve it). Called with mu held, whenever the accounts
// shrink or the queue changes.
func (b *memBudget) serve() {
	if len(b.waiters) == 0 {
		return
	}
	serverHeld, shareHeld := false, map[string]bool(nil)
	kept := b.waiters[:0]
	for _, w := range b.waiters {
		server, share := b.fits(w.need)
		server = server && (w.server <= 0 || !serverHeld)
		share = share && (w.share <= 0 || !shareHeld[w.tenant])
		if server && share {
			b.grant(w.need)
			w.served = true
			close(w.ready)
			continue
		}
		if !server {
			serverHeld = true
		}
		if !share {
			if shareHeld == nil {
				shareHeld = map[string]bool{}
			}
			shareHeld[w.tenant] = true
		}
		kept = append(kept, w)
	}
	clear(b.waiters[len(kept):])
	b.waiters = kept
}

// dequeue takes w out of the queue, unserved, and serves the requests
// its place held back. Called with mu held.
func (b *memBudget) dequeue(w *waiter) {
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.serve()
}

// close ends every wait, now and later: the host is closing.
func (b *memBudget) close() {
	b.doneOnce.Do(func() { close(b.done) })
}
