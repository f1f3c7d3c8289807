package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolshed/toolshed/host/wasm/internal/wasmcheck"
	"github.com/toolshed/toolshed/sdk/abi"
)

// A snapshot is a plugin's instance as its initialiser left it, captured
// once per plugin per process: its linear memory (in a memImage) and its
// mutable globals, with where its Go runtime keeps its random generators.
// An instance restored from it is instantiated without start functions,
// given a copy-on-write mapping of the memory, its globals set and its
// generators re-seeded; then the ABI checks run on it as on a fresh one.
//
// Tables are not captured: a module that can change a table is not
// snapshotted (wasmcheck.Stats.TableWrites), so its tables after
// instantiation are those the initialiser left.
//
// A snapshot is immutable and safe for concurrent use.
type snapshot struct {
	img     *memImage
	pages   uint32 // memory size at capture
	globals []snapGlobal
	rng     goRNG
}

type snapGlobal struct {
	name string
	val  uint64
}

// mergeGap is how far apart two data segments may be and still be merged
// (the gap filled with zeros). Go's 38,000 segments become one at 4 KiB
// (10 at 64 bytes); the zeros cost a page at most per merge.
const mergeGap = 4096

// snapshotsEnv turns snapshots off for a whole process when set to "off"
// (the test suite runs both ways).
const snapshotsEnv = "TOOLSHED_WASM_SNAPSHOTS"

// randLog records what random_get gives one module during its capture.
type randLog struct {
	mu    sync.Mutex
	mod   api.Module
	first []byte // the first 32 bytes given
}

// recordRandom is called by random_get with what it gave mod.
func (p *Plugin) recordRandom(mod api.Module, b []byte) {
	l := p.capLog.Load()
	if l == nil || l.mod != mod {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if need := 32 - len(l.first); need > 0 {
		l.first = append(l.first, b[:min(need, len(b))]...)
	}
}

// snapshotRefusal says why this plugin gets fresh instances only, or ""
// when it may be snapshotted.
func (p *Plugin) snapshotRefusal(st wasmcheck.Stats) string {
	switch {
	case !snapshotsSupported:
		return "snapshots need Linux"
	case p.host.opts.FreshInstances:
		return "the host's options turn snapshots off"
	case os.Getenv(snapshotsEnv) == "off":
		return snapshotsEnv + "=off"
	case p.cat.Manifest.Snapshot != nil && !*p.cat.Manifest.Snapshot:
		return `the manifest says "snapshot": false`
	case p.image == nil:
		return "its data segments are not ones the host can lay out (" + p.splitWhy + ")"
	case st.TableWrites:
		return "it can change its tables"
	}
	return ""
}

// snapshotFor returns the snapshot to restore an instance from, nil for a
// fresh one. The first call for a plugin that may be snapshotted captures
// it; if the initialiser fails there (trap, timeout), that is this
// instantiation's error, as it would have been for a fresh instance.
func (p *Plugin) snapshotFor(ctx context.Context) (*snapshot, error) {
	if !p.snapPending.Load() {
		return p.snap.Load(), nil
	}
	select {
	case p.snapLock <- struct{}{}:
	case <-ctx.Done():
		// Queued behind another call's capture, and given up.
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, ctx.Err())
	}
	defer func() { <-p.snapLock }()
	if !p.snapPending.Load() {
		return p.snap.Load(), nil
	}
	start := time.Now()
	s, err := p.capture(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, ctx.Err()) // the caller gave up: try again later
	}
	if errors.Is(err, ErrMemoryBudget) {
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, err) // no room now: capture later
	}
	p.snapPending.Store(false)
	var ie *initError
	switch {
	case errors.As(err, &ie):
		p.host.log.Warn("plugin initialiser failed; no snapshot, its instances are fresh", "plugin", p.name, "error", ie.err)
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, ie.err)
	case errors.Is(err, errNotGo):
		p.host.log.Debug("plugin instances are fresh", "plugin", p.name, "reason", err)
	case err != nil:
		p.host.stats.snapshotFailures.Add(1)
		p.host.log.Warn("plugin snapshot refused; its instances are fresh", "plugin", p.name, "error", err)
	default:
		p.snap.Store(s)
		p.host.stats.snapshots.Add(1)
		p.host.log.Info("plugin snapshot taken", "plugin", p.name, "memory_kb", uint64(s.pages)<<6,
			"generators", len(s.rng.states), "took", time.Since(start))
	}
	return p.snap.Load(), nil
}

// initError is an initialiser that failed during a capture.
type initError struct{ err error }

func (e *initError) Error() string { return "initialiser: " + e.err.Error() }

// capture makes the plugin's snapshot: one fresh instance initialised
// with its random_get recorded, its memory and globals read, its
// generators located; then one instance restored from it must pass the
// ABI checks and the known-answer check of its generator. Called by
// compile, with p.runtime and p.module set.
func (p *Plugin) capture(ctx context.Context) (*snapshot, error) {
	// Room in the budget first, then a CPU: a wait for room holds no slot.
	acct := p.host.budget.newAccount(true)
	if err := acct.reserve(ctx, p.minMemory); err != nil {
		return nil, err // the budget: try again later
	}
	defer acct.free()
	release, err := p.slot(ctx)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	log := &randLog{}
	in := &instance{plugin: p, quota: &quota{}, stdout: newLineLog(p.host.log, p.name, "stdout"), stderr: newLineLog(p.host.log, p.name, "stderr")}
	gate := newExecGate()
	defer gate.exit()
	mod, err := p.fresh(ictx, p.moduleConfig(in), log, gate, acct)
	release()
	if refused := acct.takeRefusal(); err != nil && refused != nil {
		return nil, refused // the budget, not the initialiser: try again later
	}
	if err != nil {
		return nil, &initError{describe(ictx, err)}
	}
	defer func() {
		mod.Close(context.Background())
		in.stdout.Flush()
		in.stderr.Flush()
	}()
	mem := mod.Memory()
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, errors.New("memory unreadable")
	}
	log.mu.Lock()
	entropy := log.first
	log.mu.Unlock()
	rng, err := locateGoRNG(b, entropy)
	if err != nil {
		return nil, err
	}
	s := &snapshot{pages: mem.Size() >> 16, rng: rng}
	for _, name := range p.image.Globals {
		g := mod.ExportedGlobal(name)
		if g == nil {
			return nil, fmt.Errorf("global %s is not exported", name)
		}
		s.globals = append(s.globals, snapGlobal{name: name, val: g.Get()})
	}
	if s.img, err = newMemImage(b); err != nil {
		return nil, err
	}
	trial, err := p.newInstanceFrom(ctx, s, p.host.budget.newAccount(true))
	if err != nil {
		s.img.close()
		return nil, fmt.Errorf("restored instance: %w", err)
	}
	trial.close(ctx)
	return s, nil
}

// baseConfig is the module configuration every instance shares.
var baseConfig = wazero.NewModuleConfig().
	WithName(""). // anonymous: many instances per runtime
	WithSysWalltime().
	WithSysNanotime().
	WithSysNanosleep().
	WithRandSource(rand.Reader)

// moduleConfig is an instance's module configuration, start functions
// aside. (ModuleConfig is immutable: each With returns a copy.)
func (p *Plugin) moduleConfig(in *instance) wazero.ModuleConfig {
	return baseConfig.WithStdout(in.stdout).WithStderr(in.stderr)
}

// fresh instantiates the module and runs its initialiser. With a split
// module (p.image), the host copies the merged data segments into the
// memory before the initialiser runs, as instantiation would have; log,
// when not nil, records what random_get gives the initialiser.
//
// gate counts the instantiation as running the instance's code (the
// caller exits it).
func (p *Plugin) fresh(ctx context.Context, cfg wazero.ModuleConfig, log *randLog, gate *execGate, acct *memAccount) (api.Module, error) {
	actx := experimental.WithMemoryAllocator(ctx, memoryAllocator(gate, acct))
	if p.image == nil {
		return p.runtime.InstantiateModule(actx, p.module, cfg.WithStartFunctions(abi.ExportInitialize))
	}
	mod, err := p.runtime.InstantiateModule(actx, p.module, cfg.WithStartFunctions())
	if err != nil {
		return nil, err
	}
	mem := mod.Memory()
	for _, s := range p.image.Segments {
		if mem == nil || !mem.Write(s.Offset, s.Data) {
			mod.Close(ctx)
			return nil, fmt.Errorf("data segment at %#x does not fit the memory", s.Offset)
		}
	}
	if log != nil {
		log.mod = mod
		p.capLog.Store(log)
		defer p.capLog.Store(nil)
	}
	if f := mod.ExportedFunction(abi.ExportInitialize); f != nil {
		if _, err := f.Call(ctx); err != nil {
			mod.Close(ctx)
			return nil, err
		}
	}
	return mod, nil
}

// restore instantiates the module from the snapshot: no start function,
// the image's memory, its globals, new seeds. It returns m0's new seed.
func (p *Plugin) restore(ctx context.Context, cfg wazero.ModuleConfig, s *snapshot, gate *execGate, acct *memAccount) (api.Module, [4]uint64, error) {
	var seed [4]uint64
	mod, err := p.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, s.img.allocator(gate, acct)), p.module, cfg.WithStartFunctions())
	if err != nil {
		return nil, seed, err
	}
	fail := func(err error) (api.Module, [4]uint64, error) {
		mod.Close(ctx)
		return nil, seed, err
	}
	mem := mod.Memory()
	if pages := mem.Size() >> 16; pages < s.pages {
		if _, ok := mem.Grow(s.pages - pages); !ok {
			return fail(fmt.Errorf("memory cannot grow to the snapshot's %d pages", s.pages))
		}
	}
	for _, g := range s.globals {
		mg, ok := mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			return fail(fmt.Errorf("global %s is not mutable", g.name))
		}
		mg.Set(g.val)
	}
	src := p.host.opts.reseedSource
	if src == nil {
		src = rand.Reader
	}
	if seed, err = s.rng.reseed(mem, src); err != nil {
		return fail(err)
	}
	return mod, seed, nil
}
