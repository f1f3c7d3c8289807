package wasm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

// TestCompileImpatientCallers: a plugin's first compile can take seconds
// (a Go module, no cache). A caller whose context ends during it — its own
// compile, or another's it waits behind — is answered with its context's
// error at once, while the compile goes on; the plugin's state reads
// "compiling" meanwhile instead of waiting; the cancelled compile is not
// remembered as the module's failure, and the next patient call runs.
func TestCompileImpatientCallers(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: []string{"ok"}}, bystanderSpec(t))
	h, _ := newHost(t, &wasm.Options{CacheDir: "off", PoolSize: -1})
	state := func() string {
		st, err := h.PluginState(plugin(t, snap, "hostile"))
		if err != nil {
			t.Fatalf("state: %s: %v", st, err)
		}
		return st
	}
	compiling := func() bool { return state() == "compiling" }

	// The caller whose own compile it is.
	a := h.NewSession()
	defer a.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := callAsync(ctx, a, snap, "ok")
	eventually(t, "the first call compiles", compiling)
	cancel()
	if err := result(t, done, "the cancelled first call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled first call: err = %v, want context canceled", err)
	}
	// A patient caller compiles (the first compile's work reaches the
	// host's in-memory cache once it ends) and holds the compile while an
	// impatient one waits behind it and gives up.
	b := h.NewSession()
	defer b.Close(context.Background())
	patient := callAsync(context.Background(), b, snap, "ok")
	eventually(t, "the patient call compiles", compiling)
	c := h.NewSession()
	defer c.Close(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	waiting := callAsync(ctx2, c, snap, "ok")
	// Time for the call to reach the wait (a call whose context has
	// already ended returns before it); the assertion below holds either
	// way.
	time.Sleep(100 * time.Millisecond)
	cancel2()
	if err := result(t, waiting, "the call waiting behind the compile"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the call waiting behind the compile: err = %v, want context canceled", err)
	}
	if err := result(t, patient, "the patient call"); err != nil {
		t.Fatalf("the patient call: %v", err)
	}
	if st := state(); st != "ready" {
		t.Fatalf("state after the patient call: %s, want ready", st)
	}
	// The impatient caller comes back and is served.
	if _, err := call(t, c, snap, "ok", `{}`); err != nil {
		t.Fatalf("the impatient caller's next call: %v", err)
	}
	// A compiled plugin reads "ready" while calls take instances of it
	// (each instantiation looks at the compile state): the bystander's
	// calls, each in a new session.
	stop := bystander(t, h, snap)
	for i := 0; i < 500; i++ {
		if st, err := h.PluginState(plugin(t, snap, "bystander")); st != "ready" {
			stop()
			t.Fatalf("a ready plugin read %q (%v) while calls ran", st, err)
		}
	}
	checkBystander(t, stop, false)
}

// plugin is the snapshot's plugin of that name.
func plugin(t *testing.T, snap *catalog.Snapshot, name string) *catalog.Plugin {
	t.Helper()
	for _, p := range snap.Plugins {
		if p.Manifest.Name == name {
			return p
		}
	}
	t.Fatalf("no plugin %s", name)
	return nil
}
