package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLeftCompileKeepsTheToken: callers who start a plugin's compile and
// give up, again and again, leave one compile in flight, not one each: a
// left compile keeps the plugin's compile token until it ends, so that a
// client cancelling its calls cannot fill the host's compile slots. The
// plugin reads "compiling" all along, and a patient caller is served.
func TestLeftCompileKeepsTheToken(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, "off", -1) // in memory, empty: the first compile is slow
	defer h.Close(context.Background())
	p, err := h.Plugin(f.echo.Plugin)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- p.Compile(ctx) }()
		waitCompiling(t, p)
		if i > 0 {
			// Time for a caller that could start a second compile to
			// start it. The check below cannot fail on a host that keeps
			// one compile per plugin, however long this is.
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("caller %d: err = %v, want context canceled", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("caller %d: not answered a minute after it gave up", i)
		}
		if n := len(h.compileSem); n > 1 {
			t.Fatalf("after caller %d gave up: %d compiles of one plugin in flight", i, n)
		}
	}
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, err := p.state(); st != "ready" || err != nil {
		t.Fatalf("state %s, %v; want ready", st, err)
	}
}

// TestClosedPluginCompilesNothing: a call that reaches a plugin after its
// host closed gets an error, not a compile whose runtime nobody closes.
func TestClosedPluginCompilesNothing(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, "off", -1)
	p, err := h.Plugin(f.echo.Plugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Compile(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("compile after close: %v, want closed", err)
	}
	if p.runtime != nil || p.module != nil {
		t.Fatal("a closed plugin compiled")
	}
}

// TestLeftCompileKeepsItsBudget: a compile whose caller gave up is still
// bound by the compile budget. A patient caller waiting behind it gets
// the budget's error once the budget has passed, as the first caller
// would have, not when the compile ends (here: never, until the test lets
// it), and the plugin reads failed.
func TestLeftCompileKeepsItsBudget(t *testing.T) {
	f := newFixture(t)
	h, err := New(&Options{CacheDir: "off", PoolSize: -1, Caps: Caps{CompileTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	h.compileGate = gate
	defer h.Close(context.Background())
	defer close(gate) // before Close, which waits for the compile
	p, err := h.Plugin(f.echo.Plugin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- p.Compile(ctx) }()
	waitCompiling(t, p)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Skipf("the first caller was not answered as leaving (%v): the budget passed before it gave up", err)
	}
	patient := make(chan error, 1)
	go func() { patient <- p.Compile(context.Background()) }()
	select {
	case err := <-patient:
		if !errors.Is(err, errCompileTimeout) {
			t.Fatalf("patient caller: %v, want the compile budget's error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the patient caller waited for the held compile, past its budget")
	}
	if st, err := p.state(); st != "failed" || !errors.Is(err, errCompileTimeout) {
		t.Fatalf("state %s, %v; want failed over the budget", st, err)
	}
}

// waitCompiling waits until p reads "compiling".
func waitCompiling(t *testing.T, p *Plugin) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if st, _ := p.state(); st == "compiling" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never read compiling")
		}
	}
}
