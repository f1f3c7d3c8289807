package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/sessionstore"
)

// With Options.Store, what a session is lives in the store as well as in
// the memory of the replicas serving it, so that any replica serves any
// request of any session (streamable HTTP; stdio has one client and no
// store):
//
//   - initialize takes the session's slot in the store (the fleet's
//     max_sessions and the key's share), and saves its record (key hash,
//     protocol version, the client's initialize parameters) before its
//     result is written; a tool_search that adds tools saves them before
//     its result is written too;
//   - every request with a session id renews the record's TTL (the idle
//     timeout) and slots, and reads it back: a replica that has never
//     seen the session adopts it (a host session with its discovered
//     tools, an SDK session made by replaying the client's initialize and
//     notifications/initialized under the same id, answers discarded);
//     one that holds it adds what was discovered elsewhere; a session
//     ended for the fleet (DELETE or eviction anywhere) ends here too;
//   - a store that does not answer changes nothing for the sessions a
//     replica holds, and admission falls back to its own counts against
//     the same limits (never no limits); the store logs it once and sets
//     toolshed_session_store_up to 0. A session a replica holds that the
//     store lost (a store restarted empty) is saved again, slots and all.
//
// A session's plugin instances are per replica, made again where needed;
// its plugins' in-memory state does not follow it (docs/DEPLOY.md).

// storeTimeout bounds the store's part of one request (the store's own
// per-operation timeout is shorter; this also covers its retry).
const storeTimeout = 2 * time.Second

// fleetState is the Server's part of the store: the sessions being
// adopted, so that concurrent requests of one session adopt it once.
type fleetState struct {
	mu       sync.Mutex
	adopting map[string]chan struct{}
}

// storeState is a session's part of the store. Its zero value is ready.
type storeState struct {
	mu      sync.Mutex
	sid     string               // chosen before initialize (the SDK asks for it), or adopted
	rec     *sessionstore.Record // as last saved or read; nil before initialize's result
	adopted bool                 // made from the store: its initialize is a replay, not to be saved
}

// sessionID is the session's id, for the SDK (ServerOptions.GetSessionID):
// chosen at random on first use (as the SDK's own), or set by adoption.
func (ms *session) sessionID() string {
	ms.store.mu.Lock()
	defer ms.store.mu.Unlock()
	if ms.store.sid == "" {
		ms.store.sid = rand.Text()
	}
	return ms.store.sid
}

func (s *Server) storeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), storeTimeout)
}

// admitShared takes a slot for a new session of tenant in the store, or,
// when the store does not answer, in this replica's counts (admit). When
// the fleet is full the session idle longest here (as admit chooses) is
// evicted, once, and the store asked again.
func (s *Server) admitShared(r *http.Request, sid, tenant string) (ok, atShare bool) {
	ctx, cancel := s.storeCtx(r)
	defer cancel()
	lim := sessionstore.Limits{Max: s.opts.MaxSessions, PerTenant: s.opts.MaxSessionsPerTenant, TTL: s.opts.IdleTimeout}
	for try := 0; ; try++ {
		adm, err := s.opts.Store.Admit(ctx, sid, tenant, lim)
		if err != nil {
			return s.admit(tenant) // the store logged it and counts it
		}
		if adm == sessionstore.Admitted {
			s.mu.Lock()
			s.admitted++
			s.byTenant[tenant]++
			s.mu.Unlock()
			return true, false
		}
		atShare = adm == sessionstore.AtShare
		var victim *session
		if try == 0 {
			s.mu.Lock()
			victim = s.idlest(tenant, atShare)
			s.mu.Unlock()
		}
		if victim == nil {
			return false, atShare
		}
		s.evict(victim)
		if err := s.opts.Store.Release(ctx, victim.sessionID(), victim.tenant, s.opts.IdleTimeout); err != nil {
			return false, atShare
		}
	}
}

// released ends a session for the fleet when it ended for good (the
// client's DELETE, eviction, a failed initialize, no initialized); one
// that merely went idle here, or whose replica shuts down, stays in the
// store for the other replicas until its TTL.
func (s *Server) released(ms *session, reason string) {
	if s.opts.Store == nil {
		return
	}
	switch reason {
	case "deleted", "evicted", "failed", "init_timeout":
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.opts.Store.Release(ctx, ms.sessionID(), ms.tenant, s.opts.IdleTimeout); err != nil {
		s.opts.Logger.Debug("mcp session not released in the store", "error", err)
	}
}

// storeMiddleware saves the session's record when initialize succeeds
// and when a call adds tools, before the result goes out (the client may
// send its next request to another replica as soon as it reads it).
func (ms *session) storeMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch method {
		case "initialize":
			ir, ok1 := res.(*mcp.InitializeResult)
			p, ok2 := req.GetParams().(*mcp.InitializeParams)
			params, jerr := json.Marshal(p)
			if !ok1 || !ok2 || jerr != nil {
				return res, nil
			}
			ms.store.mu.Lock()
			adopted := ms.store.adopted
			if !adopted {
				ms.store.rec = &sessionstore.Record{Tenant: ms.tenant, Protocol: ir.ProtocolVersion, Initialize: params}
			}
			ms.store.mu.Unlock()
			if !adopted {
				ms.save(ctx)
			}
		case "logging/setLevel":
			p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
			ms.store.mu.Lock()
			changed := ok && ms.store.rec != nil && ms.store.rec.LogLevel != string(p.Level)
			if changed {
				rec := *ms.store.rec
				rec.LogLevel = string(p.Level)
				ms.store.rec = &rec
			}
			ms.store.mu.Unlock()
			if changed {
				ms.save(ctx)
			}
		case "tools/call":
			ms.store.mu.Lock()
			changed := ms.store.rec != nil && !slices.Equal(ms.store.rec.Discovered, ms.hs.Discovered())
			ms.store.mu.Unlock()
			if changed {
				ms.save(ctx)
			}
		}
		return res, nil
	}
}

// save writes the session's record with its discovered tools as they are
// now.
func (ms *session) save(ctx context.Context) {
	ms.store.mu.Lock()
	if ms.store.rec == nil {
		ms.store.mu.Unlock()
		return
	}
	rec := *ms.store.rec
	rec.Discovered = ms.hs.Discovered()
	ms.store.rec = &rec
	ms.store.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := ms.front.opts.Store.Save(ctx, ms.sessionID(), &rec, ms.front.opts.IdleTimeout); err != nil {
		ms.front.opts.Logger.Debug("mcp session not saved in the store", "error", err)
	}
}

// shared resolves a request's session id through the store: local is the
// session this replica holds (nil: none, or another tenant's). It returns
// the session to serve the request, nil for 404.
func (s *Server) shared(h http.Handler, r *http.Request, sid, tenant string, local *session) *session {
	if local == nil && !plausibleID(sid) {
		return nil // not an id any replica makes: no round trip to the store for it
	}
	s.fleet.mu.Lock()
	adopting := s.fleet.adopting[sid]
	s.fleet.mu.Unlock()
	if adopting != nil {
		// Being adopted by a concurrent request: its session is visible
		// (live) before its replay is over; use it only once it is.
		<-adopting
		local = s.liveSession(sid)
		if local != nil && subtle.ConstantTimeCompare([]byte(local.tenant), []byte(tenant)) != 1 {
			local = nil
		}
	}
	ctx, cancel := s.storeCtx(r)
	rec, gone, err := s.touch(ctx, sid, tenant)
	cancel()
	switch {
	case err != nil:
		return local // the store is away: what this replica holds serves
	case gone:
		if local != nil {
			// Ended for the fleet elsewhere (DELETE, evicted): here too.
			local.setReason("ended_elsewhere")
			if ss := local.serverSession(); ss != nil {
				ss.Close()
			}
		}
		return nil
	case rec == nil:
		if local != nil {
			// The store lost it (restarted empty): this replica still
			// holds it, so it is saved again, slots and all.
			local.save(r.Context())
		}
		return local
	case subtle.ConstantTimeCompare([]byte(rec.Tenant), []byte(tenant)) != 1:
		return nil // another key's session: as if it did not exist
	case local != nil:
		if !subset(rec.Discovered, local.hs.Discovered()) {
			// Tools it discovered on another replica since.
			local.hs.Rediscover(rec.Discovered)
			local.sync()
		}
		local.store.mu.Lock()
		if local.store.rec == nil {
			local.store.rec = rec
		}
		level := ""
		if rec.LogLevel != "" && local.store.rec.LogLevel != rec.LogLevel {
			// Set on another replica since: this copy logs at it too.
			level = rec.LogLevel
		}
		local.store.mu.Unlock()
		if level != "" {
			s.replay(h, r, local, sid, rec.Protocol, setLevelBody(level), true)
		}
		if !subset(local.hs.Discovered(), rec.Discovered) {
			// Tools it discovered here that the store missed (a save
			// during an outage): saved now, merged with the record's.
			local.save(r.Context())
		}
		return local
	}
	return s.adopt(h, r, sid, rec)
}

// touch is Store.Touch, telling a session ended for the fleet (gone)
// apart from one the store does not know (rec nil).
func (s *Server) touch(ctx context.Context, sid, tenant string) (rec *sessionstore.Record, gone bool, err error) {
	rec, err = s.opts.Store.Touch(ctx, sid, tenant, s.opts.IdleTimeout)
	if err != nil || rec == nil {
		return nil, false, err
	}
	if rec.Ended {
		return nil, true, nil
	}
	return rec, false, nil
}

// adopt makes the session sid of rec on this replica: a host session with
// its discovered tools, and an SDK session under the same id, made by
// replaying the client's initialize and notifications/initialized through
// h (their answers discarded). Concurrent requests of one session adopt
// it once. It returns nil when the replay fails.
func (s *Server) adopt(h http.Handler, r *http.Request, sid string, rec *sessionstore.Record) *session {
	s.fleet.mu.Lock()
	if ms := s.liveSession(sid); ms != nil {
		s.fleet.mu.Unlock()
		return ms
	}
	if wait, ok := s.fleet.adopting[sid]; ok {
		s.fleet.mu.Unlock()
		<-wait
		return s.liveSession(sid)
	}
	if s.fleet.adopting == nil {
		s.fleet.adopting = map[string]chan struct{}{}
	}
	done := make(chan struct{})
	s.fleet.adopting[sid] = done
	s.fleet.mu.Unlock()
	defer func() {
		s.fleet.mu.Lock()
		delete(s.fleet.adopting, sid)
		s.fleet.mu.Unlock()
		close(done)
	}()

	// The session is already counted in the store: here it only takes
	// this replica's counts (its share of them when the store goes away).
	s.mu.Lock()
	s.admitted++
	s.byTenant[rec.Tenant]++
	s.mu.Unlock()
	ms := s.startSession(rec.Tenant)
	ms.store.mu.Lock()
	ms.store.sid, ms.store.adopted, ms.store.rec = sid, true, rec
	ms.store.mu.Unlock()
	ms.hs.Rediscover(rec.Discovered)
	ms.sync()

	replay := func(body string, withID bool) { s.replay(h, r, ms, sid, rec.Protocol, body, withID) }
	replay(`{"jsonrpc":"2.0","id":"toolshed-adopt","method":"initialize","params":`+string(rec.Initialize)+`}`, false)
	ss := ms.serverSession()
	if ss == nil || ss.InitializeParams() == nil || ss.ID() != sid {
		if ss != nil {
			ss.Close()
		}
		ms.setReason("adopt_failed")
		ms.close()
		s.opts.Logger.Warn("mcp session from the store could not be made here: its client must initialize again")
		return nil
	}
	replay(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true)
	if rec.LogLevel != "" {
		replay(setLevelBody(rec.LogLevel), true)
	}
	s.opts.Logger.Info("mcp session adopted from the store", "session", sid, "discovered", len(rec.Discovered))
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.live, sid)
		s.mu.Unlock()
		ms.close()
	}()
	return ms
}

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// plausibleID: a session id as a replica could have made it (rand.Text:
// 26 base32 letters; the bound leaves room) — short, visible ASCII.
func plausibleID(sid string) bool {
	if len(sid) > 128 {
		return false
	}
	for _, c := range []byte(sid) {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func (s *Server) liveSession(sid string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[sid]
}

func (ms *session) serverSession() *mcp.ServerSession {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.ss
}

// replay serves body to the session ms (id sid) through h as if its
// client had sent it, the answer discarded: how a replica rebuilds the
// SDK's side of a session from the store.
func (s *Server) replay(h http.Handler, r *http.Request, ms *session, sid, protocol, body string, withID bool) {
	req := r.Clone(context.WithValue(r.Context(), sessionKey{}, ms))
	req.Method = http.MethodPost
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
	req.Header = http.Header{}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if withID {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
	h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
}

// setLevelBody is a logging/setLevel request for level (from the store:
// encoded, never spliced).
func setLevelBody(level string) string {
	p, _ := json.Marshal(map[string]string{"level": level})
	return `{"jsonrpc":"2.0","id":"toolshed-adopt-level","method":"logging/setLevel","params":` + string(p) + `}`
}

// discardWriter is the response of a replayed request: kept nowhere.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}
