package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/sdk/abi"
)

// Session is one request's view of the plugins: its first call to a plugin
// gets a fresh instance, later calls reuse it, Close closes them all.
// Plugin state never crosses sessions. A Session is safe for concurrent
// use; calls to the same plugin are serialised.
type Session struct {
	host   *Host
	tenant string
	mu     sync.Mutex
	insts  map[*Plugin]*instance
	taking map[*Plugin]chan struct{} // first uses in progress
	// quotas are the session's log and artifact quotas by plugin: an
	// instance that dies and is replaced does not start them afresh.
	quotas map[*Plugin]*quota
	closed bool
}

// NewSession starts a session of no tenant: its instances count against
// the server's memory budget only.
func (h *Host) NewSession() *Session { return h.NewTenantSession("") }

// NewTenantSession starts a session of tenant (an opaque id: toolshed
// serve passes a hash of the API key): its instances' memory counts
// against the tenant's share of the budget (Options.TenantMemory) as well
// as the server's, and its SQL queries against the tenant's share of each
// database's slots (TenantSQLRunner). Sessions of one tenant share its
// shares; "" is no tenant.
func (h *Host) NewTenantSession(tenant string) *Session {
	return &Session{host: h, tenant: tenant, insts: map[*Plugin]*instance{}, taking: map[*Plugin]chan struct{}{},
		quotas: map[*Plugin]*quota{}}
}

// Call runs a deferred tool. Arguments that do not match the tool's schema
// come back as a tool error (Result.IsError) without any plugin code
// running. A failure in the plugin (trap, timeout, limit, bad result) is a
// *CallError and the instance is discarded; the next call gets a fresh one.
// So is the instance of a call whose context ended while it ran, even if
// the call returned a result (wazero may yet close that module).
func (s *Session) Call(ctx context.Context, tool *catalog.Tool, args json.RawMessage) (abi.Result, error) {
	res, err := s.CallResult(ctx, tool, args)
	return res.Result, err
}

// Result is a call's result and the artifacts the call stored, in order.
type Result struct {
	abi.Result
	Artifacts []artifact.Artifact
}

// CallResult is Call with the artifacts the call stored. A successful
// result of a tool that declares an outputSchema must carry structured
// content matching it; otherwise the call is a tool error saying why.
func (s *Session) CallResult(ctx context.Context, tool *catalog.Tool, args json.RawMessage) (Result, error) {
	p, err := s.host.Plugin(tool.Plugin)
	if err != nil {
		return Result{}, err
	}
	if err := p.validate(tool.Spec, args); err != nil {
		return Result{Result: abi.Result{Content: oneLine(err.Error()), IsError: true}}, nil
	}
	in, err := s.instance(ctx, p)
	if err != nil {
		return Result{}, err
	}
	defer p.refill() // after the call: see take
	res, saved, dead, err := in.invoke(ctx, tool.Name(), args)
	if dead {
		// Failed, or its context ended under it (invoke): the session's
		// next call gets a fresh instance.
		s.mu.Lock()
		if s.insts[p] == in {
			delete(s.insts, p)
		}
		s.mu.Unlock()
		if errors.Is(err, ErrDiscarded) {
			// Another call of this session killed it; that call reported why.
			return Result{}, err
		}
		in.close(context.Background())
	}
	if err == nil {
		if oerr := p.checkOutput(tool.Spec, res); oerr != nil {
			res = abi.Result{Content: oerr.Error(), IsError: true}
		}
	}
	return Result{Result: res, Artifacts: saved}, err
}

// Prepare compiles a plugin and readies this session's instance of it in
// the background, so that the first call does not wait. Errors surface on
// that call. The preparation is speculative: it takes room in the memory
// budget only where there is some now (it neither waits nor reclaims), and
// until its first call the instance is the first reclaimed when another
// call needs the room, whatever Options.ReclaimIdle says (ReclaimIdle
// negative turns reclaiming off for it too).
func (s *Session) Prepare(p *catalog.Plugin) {
	pl, err := s.host.Plugin(p)
	if err != nil {
		return
	}
	// Host.Close waits for it (as for refills) before closing the
	// plugin's runtime under the instance it is making.
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return
	}
	s.host.bg.Add(1)
	pl.mu.Unlock()
	go func() {
		defer s.host.bg.Done()
		// Speculative: no wait for room and no reclaim for a call that
		// may never come; the instance is reclaimable until its first call.
		if _, err := s.instance(speculative(context.Background()), pl); err != nil {
			s.host.log.Debug("prepare failed", "plugin", pl.name, "error", err)
		}
		pl.refill()
	}()
}

// instance returns the session's instance of p, taking a fresh one on
// first use. Concurrent first uses (a Prepare and the call it prepared
// for) wait for one take instead of instantiating twice.
func (s *Session) instance(ctx context.Context, p *Plugin) (*instance, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("wasm: session is closed")
		}
		if in, ok := s.insts[p]; ok {
			s.mu.Unlock()
			if !isSpeculative(ctx) {
				in.acct.claim() // a prepared instance serves calls from now on
			}
			return in, nil
		}
		wait, busy := s.taking[p]
		if !busy {
			break // this caller takes; s.mu is held
		}
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	done := make(chan struct{})
	s.taking[p] = done
	s.mu.Unlock()
	in, err := p.take(ctx, s.tenant)
	spec := isSpeculative(ctx)
	if spec && err == nil && s.host.opts.prepared != nil {
		s.host.opts.prepared()
	}
	in, err = s.hold(p, in, err, done, spec)
	if spec && err == nil {
		// Calls that queued for room while this instance was being made
		// could not reclaim it then; now they can.
		s.host.budget.kick()
	}
	return in, err
}

// hold ends a take of p (done is closed): the session holds in from now
// on, unless the take failed or the session closed meanwhile.
func (s *Session) hold(p *Plugin, in *instance, err error, done chan struct{}, spec bool) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.taking, p)
	close(done)
	if err != nil {
		return nil, err
	}
	if s.closed {
		in.close(context.Background())
		return nil, errors.New("wasm: session is closed")
	}
	q := s.quotas[p]
	if q == nil {
		q = &quota{}
		s.quotas[p] = q
	}
	in.mu.Lock() // no call runs on it yet; the lock publishes the fields
	in.quota = q
	in.owner.Store(s)
	if spec {
		in.lastUsed.Store(0) // never used: the first to reclaim (reclaim.go)
	} else {
		in.lastUsed.Store(time.Now().UnixNano())
	}
	in.mu.Unlock()
	s.insts[p] = in
	return in, nil
}

// forget drops in from the session if it still holds it (in was
// reclaimed); the next call to its plugin gets a new instance.
func (s *Session) forget(p *Plugin, in *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.insts[p] == in {
		delete(s.insts, p)
	}
}

// Close closes the session's instances. It is safe to call more than once.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	insts := s.insts
	s.insts, s.closed = nil, true
	s.mu.Unlock()
	for _, in := range insts {
		in.close(ctx)
	}
	return nil
}

// Instances reports how many live instances the session holds.
func (s *Session) Instances() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.insts)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
