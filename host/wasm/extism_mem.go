package wasm

import "fmt"

// CeilingError is a plugin that reached its memory limit with what it
// holds in its linear memory and outside it together (an Extism plugin's
// blocks and vars are held by the host, extism.go): the allocation or the
// growth that would pass the limit is refused.
type CeilingError struct {
	Limit  int64 // bytes: the plugin's memory limit
	Linear int64 // bytes of linear memory (after the growth asked for)
	Side   int64 // bytes held by the host for the instance (after the allocation asked for)
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("out of memory: the plugin's memory is limited to %d MiB (linear memory %d KiB, host-side blocks and vars %d KiB)",
		e.Limit>>20, e.Linear>>10, e.Side>>10)
}

// setCeiling bounds linear memory and side together; called before the
// instance's memory is made.
func (a *memAccount) setCeiling(n int64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.ceiling = n
	a.mu.Unlock()
}

// holdSide charges n more bytes held outside the linear memory (n < 0
// gives them back). linear is the linear memory's size now (the account
// does not know it where growth is not accounted). Growth past the
// ceiling or the budget is refused with its error. Called on the
// goroutine that runs the instance's code.
func (a *memAccount) holdSide(n, linear int64) error {
	if a == nil || n == 0 {
		return nil
	}
	a.mu.Lock()
	if n < 0 {
		n = max(n, -a.side)
		a.side += n
		freed, tenant, assigned := a.freed, a.tenant, a.assigned
		a.mu.Unlock()
		if !freed {
			a.b.release(tenant, assigned, -n)
		}
		return nil
	}
	if a.freed {
		a.mu.Unlock()
		return fmt.Errorf("the instance's memory was released")
	}
	if a.ceiling > 0 && max(linear, a.charged)+a.side+n > a.ceiling {
		err := &CeilingError{Limit: a.ceiling, Linear: max(linear, a.charged), Side: a.side + n}
		a.mu.Unlock()
		return err
	}
	tenant, assigned, reclaim := a.tenant, a.assigned, a.reclaim
	a.mu.Unlock()
	// Not under a.mu: making room may close other instances (see resize).
	if err := a.b.charge(tenant, assigned, reclaim, n); err != nil {
		return err
	}
	a.mu.Lock()
	if a.freed { // released meanwhile: nothing holds the charge
		a.mu.Unlock()
		a.b.release(tenant, assigned, n)
		return fmt.Errorf("the instance's memory was released")
	}
	a.side += n
	a.mu.Unlock()
	return nil
}
