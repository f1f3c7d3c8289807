package wasm

import "sync"

// An execGate counts the goroutines running one instance's code (its
// instantiation, its initialiser, the ABI checks, a call). Its linear
// memory is unmapped only once none is: wazero frees a module's memory as
// soon as the module is closed, and a module can be closed from another
// goroutine while its code runs (a plugin retired by a reload, the host
// closed, a runtime closed under a compile or instantiation). Unmapping
// then would make that code fault in the host process; with the gate,
// it runs on in memory that is still mapped until it sees the module is
// closed, and the last goroutine out unmaps it.
//
// A nil *execGate runs nothing deferred. It is safe for concurrent use.
type execGate struct {
	mu      sync.Mutex
	running int
	later   []func()
}

// newExecGate returns a gate with one runner: the instantiation that
// makes the instance, which calls exit when it is done.
func newExecGate() *execGate { return &execGate{running: 1} }

func (g *execGate) enter() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.running++
	g.mu.Unlock()
}

func (g *execGate) exit() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.running--
	var run []func()
	if g.running == 0 {
		run, g.later = g.later, nil
	}
	g.mu.Unlock()
	for _, f := range run {
		f()
	}
}

// whenIdle runs f now if no goroutine runs the instance's code, else when
// the last one exits.
func (g *execGate) whenIdle(f func()) {
	if g != nil {
		g.mu.Lock()
		if g.running > 0 {
			g.later = append(g.later, f)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
	f()
}
