package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/wasm/internal/wasmcheck"
	"github.com/toolshed/toolshed/sdk/abi"
)

// Plugin is a plugin as the host runs it: its effective limits and
// capabilities, its compiled module and its pool of fresh instances. It is
// safe for concurrent use.
type Plugin struct {
	host    *Host
	cat     *catalog.Plugin
	name    string
	timeout time.Duration
	pages   uint32
	output  uint32
	lim     limits
	caps    effective
	// instSem bounds this plugin's concurrent instantiations to half the
	// host's slots (at least one), so that a plugin whose initialiser
	// runs long cannot hold them all.
	instSem chan struct{}

	// compiling is held (one token) while compiling: one compile at a
	// time. A channel, not a mutex, so that a caller waiting behind
	// another's compile gives up when its context ends. status is what
	// state (Host.PluginState) reports, set by the token's holder.
	compiling  chan struct{}
	status     atomic.Pointer[compileStatus]
	runtime    wazero.Runtime
	module     wazero.CompiledModule
	compileErr error
	failedAt   time.Time
	permanent  bool         // compileErr holds for these bytes: no retry
	compileDur atomic.Int64 // nanoseconds
	// image is the module split for the host to lay out its memory (nil:
	// compiled whole; splitWhy says why); snap, when set, is what new
	// instances are restored from. Both are set by compile.
	image    *wasmcheck.Image
	splitWhy string
	// minMemory is the linear memory a fresh instance is made with
	// (bytes), reserved from the memory budget before it is made.
	minMemory int64
	snap      atomic.Pointer[snapshot]
	capLog    atomic.Pointer[randLog] // the capture in progress
	// snapPending: the plugin may be snapshotted and no capture was tried
	// yet; snapLock (one token) serialises the capture. A channel, not a
	// mutex, so that a call queued behind a capture (which may wait for
	// room in the memory budget) gives up when its context ends.
	snapPending atomic.Bool
	snapLock    chan struct{}

	mu        sync.Mutex
	pool      []*instance
	filling   bool
	byModule  map[api.Module]*instance // live instances, pooled or in use
	closed    bool
	retiredAt time.Time // when the catalog dropped this version; zero while current

	// ext is set for a plugin of the Extism ABI (extism_call.go).
	ext *extismPlugin

	schemaMu sync.Mutex
	schemas  map[string]*toolSchema
	outputs  outputSchemas // the tools' outputSchemas (output.go)
}

// toolSchema is a tool's compiled parameter schema.
type toolSchema struct {
	sch *jsonschema.Schema
	// objectOnly: the schema accepts exactly the JSON objects (see
	// objectOnlySchema), so valid JSON text that is an object needs no
	// decoding to be known valid.
	objectOnly bool
}

// retryAfter is how long a failed compile is remembered before the next
// call tries again (the operator may be fixing the file).
const retryAfter = time.Second

func newPlugin(h *Host, p *catalog.Plugin) (*Plugin, error) {
	m := p.Manifest
	pl := &Plugin{host: h, cat: p, name: m.Name, byModule: map[api.Module]*instance{}, schemas: map[string]*toolSchema{},
		instSem: make(chan struct{}, max(1, cap(h.instSem)/2)), snapLock: make(chan struct{}, 1), compiling: make(chan struct{}, 1)}
	pl.lim = resolve(h.opts.Caps, m, h.log)
	pl.timeout = pl.lim.timeout
	mem, out := pl.lim.memory, pl.lim.output
	pl.pages = uint32(mem >> 16)
	pl.output = uint32(out)
	g := h.opts.Grants[m.Name]
	if g.SHA256 != "" && !strings.EqualFold(g.SHA256, m.SHA256) {
		// The operator approved other bytes: this module is a stranger.
		h.log.Warn("plugin module does not match the sha256 its grants are pinned to; no grants given",
			"plugin", m.Name, "pinned_sha256", strings.ToLower(g.SHA256), "module_sha256", m.SHA256)
		g = Grants{}
	}
	pl.caps = intersect(m, g)
	if m.IsExtism() {
		pl.ext = newExtismPlugin(m)
	}
	h.log.Info("plugin loaded", "plugin", m.Name, "version", m.Version,
		"granted", pl.caps.describe(), "denied", denied(m, pl.caps), "grants_pinned", g.SHA256 != "",
		"timeout", pl.timeout, "max_memory_mb", mem>>20, "max_output_kb", out>>10)
	return pl, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// CompileTime reports how long the last successful compile took (zero
// before, and small when it came from the cache).
func (p *Plugin) CompileTime() time.Duration {
	return time.Duration(p.compileDur.Load())
}

// lockCompile takes the compile token, or gives up when ctx ends (or has
// ended: a caller already gone does not start a compile).
func (p *Plugin) lockCompile(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plugin %q: compile: %w", p.name, err)
	}
	select {
	case p.compiling <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("plugin %q: waiting for its compile: %w", p.name, ctx.Err())
	}
}

func (p *Plugin) unlockCompile() { <-p.compiling }

// compileStatus is what Host.PluginState reports; Plugin.status holds it
// (nil: not compiled) so that the report never waits for a compile.
type compileStatus struct {
	state string // "compiling", "ready" or "failed"
	err   error
}

// state reports "not compiled", "compiling", "ready" or "failed" (with the
// compile error), without waiting for a compile under way.
func (p *Plugin) state() (string, error) {
	st := p.status.Load()
	if st == nil {
		return "not compiled", nil
	}
	return st.state, st.err
}

// Compile reads, checks and compiles the module if that is not done yet.
// Concurrent callers wait for the one compile; a caller whose context ends
// while it waits, or during its own compile, returns at once with the
// context's error. A compile its caller left goes on in the background
// and keeps the plugin's compile token until it ends (one compile per
// plugin at a time, however often callers give up); its work reaches the
// compilation cache, and it is not remembered as the module's failure
// unless it goes over its budget, which then answers the callers waiting
// as it would have answered its own.
func (p *Plugin) Compile(ctx context.Context) error {
	if err := p.lockCompile(ctx); err != nil {
		return err
	}
	held := true
	defer func() {
		if held {
			p.unlockCompile()
		}
	}()
	if p.module != nil {
		return nil
	}
	if p.compileErr != nil && (p.permanent || time.Since(p.failedAt) < retryAfter) {
		return p.compileErr
	}
	// A closed plugin (retired, or its host closed) compiles nothing: its
	// runtime would have no one to close it. The check and the count
	// Host.Close waits for are taken together, under the lock close
	// marks the plugin with.
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("plugin %q: closed", p.name)
	}
	p.host.bg.Add(1)
	p.mu.Unlock()
	defer p.host.bg.Done()
	prev := p.status.Load()
	p.status.Store(&compileStatus{state: "compiling"})
	err := p.compile(ctx, func(timedOut error) {
		// The left compile has ended, and the next caller compiles
		// (from the cache); or its budget has passed, which is the
		// module's failure as for a caller who waited.
		// (For these bytes, as for a waiting caller: permanent.)
		p.permanent = timedOut != nil
		if timedOut != nil {
			p.fail(fmt.Errorf("plugin %q: module %s: %w", p.name, p.cat.ModulePath, timedOut))
		} else {
			p.status.Store(prev)
		}
		p.unlockCompile()
	})
	if errors.Is(err, errCompileLeft) {
		held = false // the background compile releases the token
		return err
	}
	if err != nil && ctx.Err() != nil {
		// This caller's context ended during the compile (a client that
		// cancelled its first call): the failure is the caller's, not the
		// module's, and is not remembered; the next caller compiles.
		p.permanent = false
		p.status.Store(prev)
		return err
	}
	if err != nil {
		p.fail(err)
		return err
	}
	p.status.Store(&compileStatus{state: "ready"})
	return nil
}

// fail remembers err as the module's compile failure; the caller holds
// the compile token.
func (p *Plugin) fail(err error) {
	p.compileErr, p.failedAt = err, time.Now()
	p.status.Store(&compileStatus{state: "failed", err: err})
	p.host.stats.compileFailures.Add(1)
	p.host.log.Warn("plugin failed to compile", "plugin", p.name, "error", err)
}

// compile does Compile's work; left is called, and the compile token
// released by it, when a compile whose caller's context ended (the error
// is errCompileLeft) ends in the background or goes over its budget
// (Host.compileModule).
func (p *Plugin) compile(ctx context.Context, left func(timedOut error)) error {
	start := time.Now()
	p.permanent = false
	code, err := p.cat.ReadModule() // checks the sha256
	if err != nil {
		return err
	}
	caps := p.host.opts.Caps.withDefaults()
	// From here on the outcome depends on the bytes only: a failure is
	// not retried for this version.
	p.permanent = true
	st, err := wasmcheck.Check(code, caps.budget())
	if err != nil {
		if le := (*wasmcheck.LimitError)(nil); errors.As(err, &le) || errors.Is(err, wasmcheck.ErrUnboundedTable) {
			return fmt.Errorf("plugin %q: module %s is over the compile budget: %w", p.name, p.cat.ModulePath, err)
		}
		return fmt.Errorf("plugin %q: module %s is not valid WebAssembly: %w", p.name, p.cat.ModulePath, err)
	}
	if err := CheckModuleFor(p.cat.Manifest, code); err != nil {
		return fmt.Errorf("plugin %q: module %s: %w", p.name, p.cat.ModulePath, err)
	}
	p.image, p.splitWhy = nil, ""
	if p.host.noSplit {
		p.splitWhy = "split off (measurement)"
	} else if img, err := wasmcheck.Split(code, st, mergeGap); err != nil {
		p.splitWhy = strings.TrimPrefix(err.Error(), wasmcheck.ErrNotSplittable.Error()+": ")
	} else {
		p.image, code = img, img.Module
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(!p.host.noCloseOnDone).
		WithMemoryLimitPages(p.pages).
		WithCompilationCache(p.host.cache))
	fail := func(err error) error {
		rt.Close(ctx)
		return fmt.Errorf("plugin %q: %w", p.name, err)
	}
	cm, err := p.host.compileModule(ctx, rt, code, caps.CompileTimeout, left)
	if errors.Is(err, errCompileTimeout) || errors.Is(err, errCompileLeft) {
		// The compile goes on in the background and closes rt when done.
		return fmt.Errorf("plugin %q: module %s: %w", p.name, p.cat.ModulePath, err)
	}
	if err != nil && ctx.Err() != nil {
		return fail(fmt.Errorf("module %s: compile abandoned: %w", p.cat.ModulePath, ctx.Err()))
	}
	if err != nil {
		return fail(fmt.Errorf("module %s is not valid WebAssembly: %w", p.cat.ModulePath, err))
	}
	if err := instantiateWASI(ctx, rt, p.recordRandom); err != nil {
		return fail(err)
	}
	instantiateHost := p.instantiateHostModule
	if p.ext != nil {
		instantiateHost = p.instantiateExtismModule
	}
	if err := instantiateHost(ctx, rt); err != nil {
		return fail(err)
	}
	p.minMemory = 0
	for _, m := range cm.ExportedMemories() {
		p.minMemory = max(p.minMemory, int64(m.Min())<<16)
	}
	p.runtime, p.module, p.compileErr = rt, cm, nil
	took := time.Since(start)
	p.compileDur.Store(int64(took))
	p.host.stats.compiles.Add(1)
	p.host.stats.compileNanos.Add(uint64(took))
	p.host.log.Info("plugin compiled", "plugin", p.name, "took", took)
	if why := p.snapshotRefusal(st); why != "" {
		p.host.log.Debug("plugin instances are fresh", "plugin", p.name, "reason", why)
	} else {
		p.snapPending.Store(true) // captured by the first instantiation
	}
	return nil
}

// CheckModule applies the rules a module must pass to be a plugin of this
// host, read from its bytes without compiling them: it is a reactor (no
// _start), exports toolshed_abi_version () -> i32, toolshed_alloc (i32)
// -> i32, toolshed_call (i32, i32) -> i64 and a memory, optionally
// toolshed_request_buffer () -> i64, and imports nothing but WASI preview
// 1 and the host module. Serving, "plugins validate" and the compile step
// all use it (catalog.Options.CheckModule), so they agree on every module.
// The version the module speaks is known only by running it, at its first
// instance. A module that imports extism:host/env is checked as an
// Extism plugin instead (CheckExtismModule); the compile step then checks
// it against its manifest's ABI (CheckModuleFor). CheckModule is safe for
// concurrent use.
func CheckModule(code []byte) error {
	in, err := wasmcheck.ReadInterface(code)
	if err != nil {
		return fmt.Errorf("not valid WebAssembly: %w", err)
	}
	if importsExtism(in) {
		return checkExtismInterface(in)
	}
	return checkToolshedInterface(in)
}

// checkToolshedInterface is CheckModule for a Toolshed ABI module.
func checkToolshedInterface(in *wasmcheck.Interface) error {
	if _, ok := in.Export("_start"); ok {
		return errors.New("module is a command (it exports _start); build it as a reactor: -buildmode=c-shared")
	}
	i32, i64 := wasmcheck.I32, wasmcheck.I64
	want := []struct {
		name            string
		params, results []wasmcheck.ValueType
		optional        bool
	}{
		{abi.ExportVersion, nil, []wasmcheck.ValueType{i32}, false},
		{abi.ExportAlloc, []wasmcheck.ValueType{i32}, []wasmcheck.ValueType{i32}, false},
		{abi.ExportCall, []wasmcheck.ValueType{i32, i32}, []wasmcheck.ValueType{i64}, false},
		{abi.ExportRequestBuffer, nil, []wasmcheck.ValueType{i64}, true},
	}
	for _, w := range want {
		e, ok := in.Export(w.name)
		switch {
		case !ok && w.optional:
		case !ok:
			return fmt.Errorf("module does not export %s: it is not a Toolshed ABI v%d plugin", w.name, abi.Version)
		case e.Func == nil || !slices.Equal(e.Func.Params, w.params) || !slices.Equal(e.Func.Results, w.results):
			return fmt.Errorf("export %s has the wrong signature (want %s)", w.name, signature(w.params, w.results))
		}
	}
	return checkMemoryAndImports(in, func(im wasmcheck.Import) error {
		if im.Module != wasi_snapshot_preview1.ModuleName && im.Module != abi.HostModule {
			return fmt.Errorf("module imports %s.%s, which this host does not provide", im.Module, im.Name)
		}
		return nil
	})
}

// checkMemoryAndImports checks that a module exports a memory and imports
// functions only, each of which check accepts.
func checkMemoryAndImports(in *wasmcheck.Interface, check func(wasmcheck.Import) error) error {
	memory := false
	for _, e := range in.Exports {
		memory = memory || e.Kind == 0x02
	}
	if !memory {
		return errors.New("module exports no memory")
	}
	for _, im := range in.Imports {
		if im.Kind != 0x00 {
			return fmt.Errorf("module imports %s.%s, which is not a function; this host provides only functions", im.Module, im.Name)
		}
		if err := check(im); err != nil {
			return err
		}
	}
	return nil
}

// signature writes a function type as "(i32, i32) -> i64".
func signature(params, results []wasmcheck.ValueType) string {
	names := func(ts []wasmcheck.ValueType) string {
		var b strings.Builder
		for i, t := range ts {
			if i > 0 {
				b.WriteString(", ")
			}
			switch t {
			case wasmcheck.I32:
				b.WriteString("i32")
			case wasmcheck.I64:
				b.WriteString("i64")
			default:
				fmt.Fprintf(&b, "%#x", byte(t))
			}
		}
		return b.String()
	}
	out := "(" + names(params) + ")"
	if len(results) > 0 {
		out += " -> " + names(results)
	}
	return out
}

// instance is one instantiation of a plugin's module.
type instance struct {
	plugin *Plugin
	gate   *execGate // who runs the module's code (its memory is unmapped after)
	mod    api.Module
	alloc  api.Function
	call   api.Function
	stdout *lineLog
	stderr *lineLog

	// acct is its linear memory as the memory budget counts it; owner
	// the session that holds it (nil while pooled; set once, before its
	// first call); lastUsed when a call of it last ended (unix ns).
	acct     *memAccount
	owner    atomic.Pointer[Session]
	lastUsed atomic.Int64

	mu     sync.Mutex // serialises calls
	dead   bool
	reply  []byte              // pending host_call reply
	quota  *quota              // log and artifact use (under mu; the owner's, which outlives the instance)
	saved  []artifact.Artifact // artifacts stored by the current call (under mu)
	reqBuf []byte              // the last request, reused (under mu)

	// The module's request buffer (abi.ExportRequestBuffer), checked to
	// lie in its memory; reqCap is 0 when it has none.
	reqPtr, reqCap uint32

	// ext is the Extism ABI's state of an Extism plugin's instance
	// (extism.go; under mu).
	ext *extismState
}

// request encodes the ABI request into the instance's buffer: the JSON of
// abi.Request, with the arguments compacted (json.Compact also checks
// they are one JSON value) but not HTML-escaped, so that the plugin gets
// them as the model sent them and the SDK's fast decoder can take them.
func (in *instance) request(tool string, args json.RawMessage) ([]byte, error) {
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	b := append(in.reqBuf[:0], `{"tool":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, args); err != nil {
		return nil, err
	}
	b = append(buf.Bytes(), '}')
	if cap(b) <= 64<<10 {
		in.reqBuf = b
	}
	return b, nil
}

// instantiate makes an instance no session holds yet.
func (p *Plugin) instantiate(ctx context.Context) (*instance, error) {
	return p.instantiateAs(ctx, p.host.budget.newAccount(false))
}

// instantiateAs makes an instance whose memory is charged to acct.
func (p *Plugin) instantiateAs(ctx context.Context, acct *memAccount) (*instance, error) {
	if err := p.Compile(ctx); err != nil {
		return nil, err
	}
	in, err := p.newInstance(ctx, acct)
	if err != nil {
		p.host.stats.instantiateFailures.Add(1)
		return nil, err
	}
	p.host.stats.instantiations.Add(1)
	return in, nil
}

// newInstance makes an instance, restored from the plugin's snapshot when
// it has one, and checks its ABI version.
func (p *Plugin) newInstance(ctx context.Context, acct *memAccount) (*instance, error) {
	s, err := p.snapshotFor(ctx)
	if err != nil {
		acct.free()
		return nil, err
	}
	return p.newInstanceFrom(ctx, s, acct)
}

// slot waits for an instantiation slot. Instantiations queue for a CPU,
// so a burst of new sessions does not make them all slow; the wait does
// not count against the deadline. A plugin takes its own slot first, so
// that it never holds more than half of the host's.
func (p *Plugin) slot(ctx context.Context) (release func(), err error) {
	var held []chan struct{}
	release = func() {
		for _, sem := range held {
			<-sem
		}
	}
	for _, sem := range []chan struct{}{p.instSem, p.host.instSem} {
		select {
		case sem <- struct{}{}:
			held = append(held, sem)
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, ctx.Err())
		}
	}
	return release, nil
}

// newInstanceFrom makes an instance from s, or a fresh one when s is nil,
// its memory charged to acct (freed if no instance is made).
func (p *Plugin) newInstanceFrom(ctx context.Context, s *snapshot, acct *memAccount) (_ *instance, err error) {
	in := &instance{plugin: p, gate: newExecGate(), acct: acct, quota: &quota{},
		stdout: newLineLog(p.host.log, p.name, "stdout"),
		stderr: newLineLog(p.host.log, p.name, "stderr")}
	defer in.gate.exit() // instantiation, initialiser and ABI checks are done
	defer func() {
		if err != nil {
			acct.free()
		}
	}()
	// The memory it starts with is charged before it is made (wazero
	// cannot be refused its first allocation).
	size := p.minMemory
	if s != nil {
		size = max(size, int64(s.pages)<<16)
	}
	if p.ext != nil {
		// What the host holds for it counts against its memory limit too.
		in.ext = newExtismState()
		acct.setCeiling(int64(p.pages) << 16)
	}
	if err := acct.reserve(ctx, size); err != nil {
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, err)
	}
	release, err := p.slot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	// Instantiation runs the start function and the plugin's initialiser
	// (or restores the snapshot) under the plugin's call timeout.
	ictx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var mod api.Module
	var seed [4]uint64
	if s != nil {
		mod, seed, err = p.restore(ictx, p.moduleConfig(in), s, in.gate, acct)
	} else {
		mod, err = p.fresh(ictx, p.moduleConfig(in), nil, in.gate, acct)
	}
	if err != nil {
		if refused := acct.takeRefusal(); refused != nil {
			return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, refused)
		}
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, in.explain(describe(ictx, err)))
	}
	in.mod = mod
	if p.ext != nil {
		err = p.ext.initialise(ictx, mod)
		if err != nil {
			err = fmt.Errorf("plugin %q: instantiate: %w", p.name, in.explain(describe(ictx, err)))
		}
	} else {
		err = in.checkABI(ictx, mod)
	}
	if err != nil {
		mod.Close(ctx)
		return nil, err
	}
	if s != nil {
		// The known-answer check: m0's generator runs from the seed the
		// host just gave it. If not, no more restored instances.
		state, _ := mod.Memory().Read(s.rng.m0, chachaSize)
		if err := s.rng.check(state, seed); err != nil {
			mod.Close(ctx)
			if p.snap.CompareAndSwap(s, nil) {
				p.host.stats.snapshotFailures.Add(1)
				p.host.log.Warn("plugin snapshot dropped; its instances are fresh", "plugin", p.name, "error", err)
			}
			return nil, fmt.Errorf("plugin %q: restored instance: %w", p.name, err)
		}
		p.host.stats.restores.Add(1)
	}
	if err := ictx.Err(); err != nil {
		// Ended while its code ran: wazero may still close it (see
		// endedUnder), so it is not handed out.
		mod.Close(ctx)
		return nil, fmt.Errorf("plugin %q: instantiate: %w", p.name, err)
	}
	p.mu.Lock()
	p.byModule[mod] = in
	p.mu.Unlock()
	return in, nil
}

// checkABI checks a new instance of a Toolshed ABI plugin: the ABI
// version it speaks, its request buffer. The caller closes it on error.
func (in *instance) checkABI(ictx context.Context, mod api.Module) error {
	p := in.plugin
	in.alloc = mod.ExportedFunction(abi.ExportAlloc)
	in.call = mod.ExportedFunction(abi.ExportCall)
	v, err := mod.ExportedFunction(abi.ExportVersion).Call(ictx)
	if err != nil {
		return fmt.Errorf("plugin %q: %s: %w", p.name, abi.ExportVersion, describe(ictx, err))
	}
	if v[0] != abi.Version {
		return fmt.Errorf("plugin %q: module speaks ABI version %d; this host speaks %d", p.name, uint32(v[0]), abi.Version)
	}
	if f := mod.ExportedFunction(abi.ExportRequestBuffer); f != nil {
		r, err := f.Call(ictx)
		if err != nil {
			return fmt.Errorf("plugin %q: %s: %w", p.name, abi.ExportRequestBuffer, describe(ictx, err))
		}
		ptr, n := abi.Unpack(r[0])
		if size := mod.Memory().Size(); n > 0 && uint64(ptr)+uint64(n) > uint64(size) {
			return fmt.Errorf("plugin %q: %s returned %#x+%d, outside the module's memory (%d bytes)", p.name, abi.ExportRequestBuffer, ptr, n, size)
		}
		in.reqPtr, in.reqCap = ptr, n
	}
	return nil
}

// take returns a fresh instance for a session of tenant: from the pool
// when one is ready, else a new one; its memory is charged to tenant's
// share of the budget. The caller tops the pool up (refill) once the call
// that needed the instance is done, so that the instantiation in the
// background does not compete with that call for a CPU.
func (p *Plugin) take(ctx context.Context, tenant string) (*instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("plugin %q: closed", p.name)
	}
	var in *instance
	if n := len(p.pool); n > 0 {
		in, p.pool = p.pool[n-1], p.pool[:n-1]
	}
	p.mu.Unlock()
	if in != nil {
		p.host.stats.poolHits.Add(1)
		if err := in.acct.assign(ctx, tenant); err != nil {
			if isSpeculative(ctx) {
				p.repool(in) // no call was refused: the pool keeps it
			} else {
				in.close(context.Background())
			}
			return nil, fmt.Errorf("plugin %q: %w", p.name, err)
		}
	} else {
		p.host.stats.poolMisses.Add(1)
		var err error
		if in, err = p.instantiateAs(ctx, p.host.budget.tenantAccount(ctx, tenant)); err != nil {
			p.refill()
			return nil, err
		}
	}
	return in, nil
}

// Warm compiles the plugin and fills its pool, for a tool just discovered.
func (p *Plugin) Warm(ctx context.Context) error {
	if err := p.Compile(ctx); err != nil {
		return err
	}
	p.refill()
	return nil
}

// refill tops the pool up to PoolSize in the background, one goroutine at
// a time per plugin.
func (p *Plugin) refill() {
	size := p.host.opts.PoolSize
	p.mu.Lock()
	if size <= 0 || p.filling || p.closed || !p.retiredAt.IsZero() || len(p.pool) >= size {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.host.bg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.host.bg.Done()
		for {
			in, err := p.instantiate(context.Background())
			p.mu.Lock()
			if err != nil || p.closed || len(p.pool) >= size {
				p.filling = false
				p.mu.Unlock()
				if in != nil {
					in.close(context.Background())
				}
				return
			}
			p.pool = append(p.pool, in)
			p.mu.Unlock()
		}
	}()
}

// repool gives back a pooled instance taken for nothing, unless the pool
// has filled meanwhile or the plugin closed or was retired: then it
// closes.
func (p *Plugin) repool(in *instance) {
	p.mu.Lock()
	if !p.closed && p.retiredAt.IsZero() && len(p.pool) < p.host.opts.PoolSize {
		p.pool = append(p.pool, in)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	in.close(context.Background())
}

func (p *Plugin) close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	pool := p.pool
	p.pool = nil
	p.mu.Unlock()
	for _, in := range pool {
		in.close(ctx)
	}
	p.compiling <- struct{}{} // a compile in progress ends first
	defer p.unlockCompile()
	p.snapLock <- struct{}{} // a capture in progress ends first
	p.snapPending.Store(false)
	if s := p.snap.Swap(nil); s != nil {
		s.img.close()
	}
	<-p.snapLock
	if p.runtime != nil {
		return p.runtime.Close(ctx)
	}
	return nil
}

func (in *instance) close(ctx context.Context) {
	in.mu.Lock()
	in.dead = true
	in.mu.Unlock()
	in.mod.Close(ctx)
	if !growthAccounted {
		in.acct.free() // no allocator of the host's frees it
	}
	in.stdout.Flush()
	in.stderr.Flush()
	p := in.plugin
	p.mu.Lock()
	delete(p.byModule, in.mod)
	p.mu.Unlock()
	p.host.collect()
}

// CallError is a plugin call that failed in the plugin: it trapped, timed
// out, broke a limit or returned garbage. The instance is discarded.
type CallError struct {
	Plugin, Tool string
	Err          error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("plugin %q: tool %q: %v", e.Plugin, e.Tool, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// ErrDiscarded is returned for a call on an instance already discarded.
var ErrDiscarded = errors.New("instance was discarded after a failure")

// invoke runs one call and returns its result and the artifacts it
// stored. Any failure in the plugin kills the instance, and so does a
// call whose context ended before it returned, even with a result: see
// endedUnder. dead reports that the instance must not be used again (the
// caller closes it); it is true whenever err is not nil.
func (in *instance) invoke(ctx context.Context, tool string, args json.RawMessage) (res abi.Result, saved []artifact.Artifact, dead bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	res, saved, err = in.run(ctx, tool, args)
	return res, saved, in.dead || err != nil, err
}

// endedUnder marks the instance dead when ctx ended while code ran in
// it. wazero (WithCloseOnContextDone) closes the module from a goroutine
// that watches the call's context; once that goroutine has seen the
// context end, the close comes even when the call returned first, and
// may land in the middle of the instance's next call. Such an instance
// is discarded as the call returns, so the next call of its session
// always gets a fresh one. (A context that ends after the call returned
// is harmless: wazero's watcher then stops without closing.) Called
// with in.mu held.
func (in *instance) endedUnder(ctx context.Context) {
	if ctx.Err() != nil {
		in.dead = true
	}
}

// run is invoke's call, with in.mu held.
func (in *instance) run(ctx context.Context, tool string, args json.RawMessage) (abi.Result, []artifact.Artifact, error) {
	p := in.plugin
	defer in.lastUsed.Store(time.Now().UnixNano())
	fail := func(err error) (abi.Result, []artifact.Artifact, error) {
		if refused := in.acct.takeRefusal(); refused != nil {
			// The plugin died of a growth the budget refused, not of its
			// own limit: say so.
			err = fmt.Errorf("%w (its memory could not grow: %v)", refused, err)
		} else {
			err = in.explain(err) // out of memory; the plugin's stderr (explain.go)
		}
		p.host.log.Warn("plugin call failed; instance discarded", "plugin", p.name, "tool", tool, "error", err)
		in.dead = true
		in.mod.Close(context.Background())
		if !growthAccounted {
			in.acct.free()
		}
		in.stdout.Flush()
		in.stderr.Flush()
		return abi.Result{}, nil, &CallError{Plugin: p.name, Tool: tool, Err: err}
	}
	// The memory stays mapped while the call runs, whoever closes the
	// module (execGate). Entered before the check: a module closed before
	// it is seen closed here, and its memory is not touched.
	in.gate.enter()
	defer in.gate.exit()
	if in.dead || in.mod.IsClosed() {
		return abi.Result{}, nil, &CallError{Plugin: p.name, Tool: tool, Err: ErrDiscarded}
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	defer in.endedUnder(ctx) // before cancel: the timeout's end counts, not this function's own
	in.quota.startCall()
	in.acct.takeRefusal() // one left by a call that coped with it
	in.saved = nil
	if p.ext != nil {
		return in.callExtism(ctx, tool, args, fail)
	}
	req, err := in.request(tool, args)
	if err != nil {
		return abi.Result{}, nil, fmt.Errorf("plugin %q: tool %q: encode request: %w", p.name, tool, err)
	}
	mem := in.mod.Memory()
	var ptr uint32
	if uint64(len(req)) <= uint64(in.reqCap) {
		// The module's request buffer: no toolshed_alloc call. (Its range
		// was checked at instantiation; Write checks it again.)
		ptr = in.reqPtr
		if !mem.Write(ptr, req) {
			return fail(fmt.Errorf("%s buffer %#x: %d bytes there are outside the module's memory (%d bytes)", abi.ExportRequestBuffer, ptr, len(req), mem.Size()))
		}
	} else {
		r, err := in.alloc.Call(ctx, uint64(len(req)))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", abi.ExportAlloc, describe(ctx, err)))
		}
		ptr = uint32(r[0])
		if !mem.Write(ptr, req) {
			return fail(fmt.Errorf("%s returned %#x: %d bytes there are outside the module's memory (%d bytes)", abi.ExportAlloc, ptr, len(req), mem.Size()))
		}
	}
	r, err := in.call.Call(ctx, uint64(ptr), uint64(len(req)))
	in.stdout.Flush()
	in.stderr.Flush()
	if err != nil {
		return fail(describe(ctx, err))
	}
	rptr, rlen := abi.Unpack(r[0])
	if rlen > p.output {
		return fail(fmt.Errorf("result of %d bytes exceeds the plugin's limit of %d", rlen, p.output))
	}
	if uint64(rptr)+uint64(rlen) > uint64(mem.Size()) {
		return fail(fmt.Errorf("result pointer %#x+%d is outside the module's memory (%d bytes)", rptr, rlen, mem.Size()))
	}
	raw, _ := mem.Read(rptr, rlen)
	// decodeResult copies out of guest memory: the slice dies with the
	// next call.
	res, err := decodeResult(raw)
	if err != nil {
		return fail(err)
	}
	saved := in.saved
	in.saved = nil
	return res, saved, nil
}

// describe turns a wazero error into what went wrong, in words.
func describe(ctx context.Context, err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("timed out (%w)", context.DeadlineExceeded)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("canceled (%w)", context.Canceled)
		}
		return fmt.Errorf("the plugin exited with code %d", exit.ExitCode())
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s", ctx.Err(), firstLine(err.Error()))
	}
	// wazero appends the wasm stack trace; the first line says what trapped.
	return fmt.Errorf("trapped: %s", firstLine(err.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// validate checks a call's arguments against the tool's JSON Schema; the
// error, if any, is for the model.
func (p *Plugin) validate(spec manifest.Tool, args json.RawMessage) error {
	p.schemaMu.Lock()
	ts, ok := p.schemas[spec.Name]
	if !ok {
		sch, err := manifest.CompileSchema(spec.Parameters)
		if err != nil {
			p.schemaMu.Unlock()
			return fmt.Errorf("the tool's parameter schema does not compile: %v", err)
		}
		ts = &toolSchema{sch: sch, objectOnly: objectOnlySchema(spec.Parameters)}
		p.schemas[spec.Name] = ts
	}
	p.schemaMu.Unlock()
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if ts.objectOnly && isObjectText(args) {
		return nil
	}
	v, err := decodeArgs(args)
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if err := ts.sch.Validate(v); err != nil {
		return fmt.Errorf("arguments do not match the tool's schema: %v", err)
	}
	return nil
}
