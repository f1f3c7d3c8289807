// Package wasm runs Toolshed plugins: WebAssembly modules (ABI version 1,
// docs/ABI.md) under wazero, in a deny-by-default sandbox. Modules built
// with an Extism PDK ("abi": "extism") run in the same sandbox: the host
// provides their extism:host/env imports itself (extism.go), their
// blocks and vars counted with their memory.
//
// A Host compiles a plugin lazily, the first time one of its tools is
// needed, after checking the module's sha256 against its manifest; one
// compile per module however many sessions ask at once, with an on-disk
// compilation cache in a host-owned directory. Each plugin gets its own
// wazero runtime so its memory cap is its own.
//
// Plugin state never crosses requests: a Session's first call to a plugin
// gets a new instance (taken from a small pool of pre-instantiated,
// never-used instances), later calls of the session reuse it, and
// Session.Close closes it. Calls on one instance are serialised. An
// instance that trapped, timed out or broke a limit is discarded, never
// reused.
//
// A new instance is, on Linux, restored from the plugin's snapshot: its
// initialiser runs once per process, its memory is kept in a sealed memfd
// that each instance maps copy-on-write, its globals are set and its Go
// runtime's random generators re-seeded (docs/RUNTIME.md, "Snapshots").
// Elsewhere, for a manifest that opts out, with Options.FreshInstances,
// and whenever a capture or its known-answer check fails, instances are
// fresh: instantiated and initialised from scratch. Either way the
// module is compiled split when it can be: its data segments merged and
// copied into memory by the host rather than applied one by one.
//
// The sandbox grants nothing by default: no filesystem, environment,
// arguments or sockets; stdout and stderr are captured, bounded and logged
// with the plugin's name. Capabilities are host functions: the manifest
// requests, the operator's Grants grant, the plugin gets the intersection.
//
// Host, Plugin and Session are safe for concurrent use.
package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
)

// ArtifactStore stores artifacts (host/artifact.Store is one). It must
// be safe for concurrent use.
type ArtifactStore interface {
	Put(dir, name, contentType string, data []byte) (artifact.Artifact, error)
}

// TenantArtifactStore is an ArtifactStore that accounts what it holds by
// tenant: the files of a tenant's sessions (NewTenantSession) are stored
// through PutFor, so that a full store makes room from the writer's own
// files first (host/artifact.Store is one).
type TenantArtifactStore interface {
	ArtifactStore
	PutFor(tenant, dir, name, contentType string, data []byte) (artifact.Artifact, error)
}

var _ TenantArtifactStore = (*artifact.Store)(nil)

// Options configure a Host. The zero value is usable: default cache
// directory, a pool of 2, no capabilities granted, default caps.
type Options struct {
	// CacheDir holds compiled modules across processes. Empty means the
	// user cache directory (os.UserCacheDir()/toolshed/wasm); "off" keeps
	// the cache in memory only. It must not be inside a plugin directory.
	CacheDir string
	// PoolSize is how many fresh instances are kept ready per plugin once
	// it is in use; 0 means 2, negative means none.
	PoolSize int
	// Caps bound what any manifest may ask for.
	Caps Caps
	// Grants are the operator's grants, by plugin name. A plugin absent
	// here is granted nothing.
	Grants map[string]Grants
	// SQL runs the "sql" capability; nil refuses it.
	SQL SQLRunner
	// Artifacts stores the files of plugins granted "artifacts", in the
	// grant's directory; nil: a store with artifact's default retention.
	// A call's files come back with its result (Session.CallResult).
	Artifacts ArtifactStore
	// Logger receives plugin output, capability logs and load decisions;
	// nil discards them.
	Logger *slog.Logger
	// RetireGrace keeps a dropped plugin version compiled this long after
	// the catalog lost it (Sync); 0 means 5 minutes, negative means none.
	RetireGrace time.Duration
	// FreshInstances turns snapshots off: every instance is instantiated
	// and initialised from scratch. By default, on Linux, a plugin's
	// instances are restored from a copy-on-write snapshot taken after
	// its initialiser (docs/RUNTIME.md). The environment variable
	// TOOLSHED_WASM_SNAPSHOTS=off does the same for a whole process.
	FreshInstances bool
	// MemoryBudget bounds the committed linear memory of all plugin
	// instances together, in bytes: an instance that would pass it is not
	// made and a memory that would pass it does not grow (the call fails
	// with a *BudgetError), after idle instances were reclaimed to make
	// room (ReclaimIdle). 0 means DefaultMemoryBudget(); negative, none.
	// Growth is counted on Linux; elsewhere only what instances start with.
	MemoryBudget int64
	// TenantMemory bounds, in bytes, what the instances of one tenant's
	// sessions (NewTenantSession) hold together; 0 means no share.
	TenantMemory int64
	// ReclaimIdle: when the budget is reached, the instances of sessions
	// that made no call for this long are closed to make room (their next
	// call gets a new instance). 0 means a minute; negative, never.
	ReclaimIdle time.Duration
	// MemoryWait: a session's new instance that finds no room in the
	// budget (or its tenant's share), after idle instances were
	// reclaimed, waits this long for room to be released, in arrival
	// order, before the call fails; its context ending ends the wait. 0
	// (or negative) refuses at once; at most MaxMemoryWait. Growth of a
	// running instance never waits.
	MemoryWait time.Duration

	// reseedSource replaces crypto/rand for re-seeding restored
	// instances (tests: the known-answer check).
	reseedSource io.Reader
	// prepared, when set, runs after a speculative instance (Prepare) is
	// made and before its session holds it (tests: the window in which
	// it is charged to the budget but cannot be reclaimed yet).
	prepared func()
}

// Host runs plugins. It is safe for concurrent use.
type Host struct {
	opts   Options
	log    *slog.Logger
	budget *memBudget // all instances' linear memory
	cache  wazero.CompilationCache
	mu     sync.Mutex
	byKey  map[string]*Plugin
	closed bool
	bg     sync.WaitGroup // background pool refills and compiles
	// instSem bounds concurrent instantiations to the CPUs.
	instSem chan struct{}
	// compileSem bounds concurrent compiles; a compile past its time
	// budget holds its slot until it really ends.
	compileSem chan struct{}
	// compileGate, when set (tests only), holds every compile until it
	// is closed.
	compileGate chan struct{}

	stats struct {
		compiles, compileFailures, compileNanos atomic.Uint64
		instantiations, instantiateFailures     atomic.Uint64
		poolHits, poolMisses                    atomic.Uint64
		snapshots, snapshotFailures, restores   atomic.Uint64
		reclaimed                               atomic.Uint64
	}

	// noCloseOnDone turns off WithCloseOnContextDone: for measuring its
	// cost only (a call could then never be stopped).
	noCloseOnDone bool
	// noSplit compiles modules whole (wazero applies their data
	// segments, no snapshots): for measuring what the split saves.
	noSplit bool
}

// New returns a Host.
func New(opts *Options) (*Host, error) {
	h := &Host{byKey: map[string]*Plugin{}, instSem: make(chan struct{}, runtime.GOMAXPROCS(0)),
		compileSem: make(chan struct{}, max(maxConcurrentCompiles, runtime.GOMAXPROCS(0)))}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.PoolSize == 0 {
		h.opts.PoolSize = 2
	}
	if h.opts.Artifacts == nil {
		h.opts.Artifacts = artifact.New(artifact.Options{})
	}
	if h.opts.MemoryBudget == 0 {
		h.opts.MemoryBudget = DefaultMemoryBudget()
	}
	if h.opts.MemoryWait > MaxMemoryWait {
		return nil, fmt.Errorf("wasm: MemoryWait %s is over %s", h.opts.MemoryWait, MaxMemoryWait)
	}
	h.budget = newMemBudget(h.opts.MemoryBudget, h.opts.TenantMemory, h.opts.MemoryWait, h.reclaim)
	h.budget.nextIdle = h.nextIdle
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	switch dir := h.opts.CacheDir; dir {
	case "off":
		h.cache = wazero.NewCompilationCache()
	default:
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "toolshed", "wasm")
		}
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache %s: %w", dir, err)
		}
		h.opts.CacheDir = dir
		h.cache = c
	}
	return h, nil
}

// CacheDir reports the compilation cache directory ("off" when in memory).
func (h *Host) CacheDir() string { return h.opts.CacheDir }

// Plugin returns the host's handle of a catalog plugin, creating it (not
// compiling it) on first use. Handles are keyed by manifest file and module
// hash, so a plugin updated on disk gets a new handle.
func (h *Host) Plugin(p *catalog.Plugin) (*Plugin, error) {
	key := pluginKey(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("wasm: host is closed")
	}
	if pl, ok := h.byKey[key]; ok {
		return pl, nil
	}
	pl, err := newPlugin(h, p)
	if err != nil {
		return nil, err
	}
	h.byKey[key] = pl
	return pl, nil
}

// Close closes every plugin and instance. Sessions still open fail their
// next call.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	plugins := make([]*Plugin, 0, len(h.byKey))
	for _, p := range h.byKey {
		plugins = append(plugins, p)
	}
	h.mu.Unlock()
	var errs []error
	for _, p := range plugins {
		p.mu.Lock()
		p.closed = true // stops refills
		p.mu.Unlock()
	}
	h.budget.close() // a Prepare waiting for room gives up
	h.bg.Wait()
	for _, p := range plugins {
		errs = append(errs, p.close(ctx))
	}
	errs = append(errs, h.cache.Close(ctx))
	return errors.Join(errs...)
}

// RetireGrace is how long a plugin version the catalog dropped stays
// compiled, so that requests started before the update can still take it
// up; default 5 minutes.
const defaultRetireGrace = 5 * time.Minute

// Sync tells the host which plugin versions the catalog now holds. Versions
// no longer there are retired: their pooled instances close at once; their
// compiled module closes when no instance of them is left and the grace
// period has passed. Call it after every reload (catalog.Live's OnChange).
func (h *Host) Sync(snap *catalog.Snapshot) {
	current := map[string]bool{}
	for _, p := range snap.Plugins {
		current[pluginKey(p)] = true
	}
	h.mu.Lock()
	var retire []*Plugin
	for key, pl := range h.byKey {
		pl.mu.Lock()
		if !current[key] && pl.retiredAt.IsZero() {
			pl.retiredAt = time.Now()
			retire = append(retire, pl)
		} else if current[key] {
			pl.retiredAt = time.Time{} // back in the catalog
		}
		pl.mu.Unlock()
	}
	h.mu.Unlock()
	for _, pl := range retire {
		pl.mu.Lock()
		pool := pl.pool
		pl.pool = nil
		pl.mu.Unlock()
		for _, in := range pool {
			in.close(context.Background())
		}
	}
	h.collect()
}

// collect closes retired plugin versions with no live instance left whose
// grace period is over.
func (h *Host) collect() {
	grace := h.opts.RetireGrace
	if grace == 0 {
		grace = defaultRetireGrace
	}
	h.mu.Lock()
	var done []*Plugin
	for key, pl := range h.byKey {
		pl.mu.Lock()
		idle := !pl.retiredAt.IsZero() && len(pl.byModule) == 0 && !pl.filling && time.Since(pl.retiredAt) >= max(grace, 0)
		pl.mu.Unlock()
		if idle {
			delete(h.byKey, key)
			done = append(done, pl)
		}
	}
	h.mu.Unlock()
	for _, pl := range done {
		pl.close(context.Background())
	}
}

// Plugins reports how many plugin versions the host holds (compiled or not).
func (h *Host) Plugins() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byKey)
}

// PluginState says where a catalog plugin stands in this host: "not
// compiled" (no tool of it was needed yet), "ready", or "failed" with the
// compile error.
func (h *Host) PluginState(p *catalog.Plugin) (state string, err error) {
	h.mu.Lock()
	pl, ok := h.byKey[pluginKey(p)]
	h.mu.Unlock()
	if !ok {
		return "not compiled", nil
	}
	return pl.state()
}

// Stats are a Host's running totals since New, for metrics. Counters only
// grow.
type Stats struct {
	Compiles        uint64        // modules compiled (from the cache or not)
	CompileFailures uint64        // modules refused or failed to compile
	CompileTime     time.Duration // spent compiling, in all
	Instantiations  uint64        // instances made (pool refills included)
	// InstantiateFailures counts instances that could not be made
	// (initialiser trapped or timed out, wrong ABI version).
	InstantiateFailures uint64
	// PoolHits and PoolMisses count sessions' first calls to a plugin
	// served from the pool and those that had to instantiate.
	PoolHits, PoolMisses uint64
	// Snapshots counts plugins snapshotted; SnapshotFailures those whose
	// capture or known-answer check failed (their instances are fresh);
	// Restores the instances restored from a snapshot (of Instantiations).
	Snapshots, SnapshotFailures, Restores uint64
	// Reclaimed counts idle sessions' instances closed to make room in
	// the memory budget.
	Reclaimed uint64
}

// Stats returns the running totals. Safe for concurrent use.
func (h *Host) Stats() Stats {
	st := &h.stats
	return Stats{Compiles: st.compiles.Load(), CompileFailures: st.compileFailures.Load(),
		CompileTime:    time.Duration(st.compileNanos.Load()),
		Instantiations: st.instantiations.Load(), InstantiateFailures: st.instantiateFailures.Load(),
		PoolHits: st.poolHits.Load(), PoolMisses: st.poolMisses.Load(),
		Snapshots: st.snapshots.Load(), SnapshotFailures: st.snapshotFailures.Load(), Restores: st.restores.Load(),
		Reclaimed: st.reclaimed.Load()}
}

// pluginKey identifies a plugin version: manifest file, module hash, version.
func pluginKey(p *catalog.Plugin) string {
	return p.ManifestPath + "\x00" + p.Manifest.SHA256 + "\x00" + p.Manifest.Version
}

// errCompileTimeout is a compile that went over its time budget.
var errCompileTimeout = errors.New("compilation went over its time budget")

// errCompileLeft is a compile whose caller's context ended first.
var errCompileLeft = errors.New("compile left to finish in the background")

// compileModule compiles code on rt within budget. Past the budget it
// returns errCompileTimeout at once, and when ctx ends first it returns
// errCompileLeft (wrapping ctx's error) at once; either way the compile
// (wazero cannot stop one) goes on in the background, keeps its compile
// slot, and closes rt when it ends. For errCompileLeft, left is called
// once: with nil when the compile ends within the budget, or with the
// errCompileTimeout error when the budget passes first (the compile still
// runs on). An impatient caller is answered when it gives up, not when
// the compile does, and the budget holds for a compile nobody waits for.
func (h *Host) compileModule(ctx context.Context, rt wazero.Runtime, code []byte, budget time.Duration, left func(timedOut error)) (wazero.CompiledModule, error) {
	select {
	case h.compileSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	type result struct {
		cm  wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	h.bg.Add(1) // Close waits for it before closing the cache
	go func() {
		defer h.bg.Done()
		defer func() { <-h.compileSem }()
		if h.compileGate != nil {
			<-h.compileGate // tests: hold the compile
		}
		cm, err := rt.CompileModule(context.Background(), code)
		done <- result{cm, err}
	}()
	timeout := fmt.Errorf("%w of %s", errCompileTimeout, budget)
	t := time.NewTimer(budget)
	// detach leaves the compile to end in the background, then closes rt;
	// then hears of the compile's end or of the budget passing, whichever
	// comes first. Host.Close waits for it: the count is taken while the
	// caller (Plugin.Compile) still holds one, so never from zero during
	// Close's wait.
	detach := func(then func(timedOut error)) {
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			defer t.Stop()
			select {
			case <-done:
				rt.Close(context.Background())
				then(nil)
			case <-t.C:
				then(timeout)
				<-done
				rt.Close(context.Background())
			}
		}()
	}
	select {
	case r := <-done:
		t.Stop()
		return r.cm, r.err
	case <-t.C:
		detach(func(error) {})
		return nil, timeout
	case <-ctx.Done():
		detach(left)
		return nil, fmt.Errorf("%w: %w", errCompileLeft, ctx.Err())
	}
}
