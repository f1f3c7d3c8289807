package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's StreamableHTTPHandler does the transport: sessions by
// Mcp-Session-Id, SSE and JSON responses, the GET stream, DELETE, the idle
// timeout, body limits. Handler adds what it leaves to the application,
// looking at each POST's JSON-RPC messages before the SDK does:
//
//   - admission: a slot is taken at initialize (not at initialized), freed
//     when the session closes; a session whose client never sends
//     notifications/initialized is dropped after InitTimeout;
//   - refusals in JSON-RPC form: no session id and not initialize (400,
//     -32600), unknown method (-32601), bad JSON (400, -32700), too many
//     sessions (503, -32000), unknown session (404, -32001) — the SDK
//     answers these in plain text or, for a request without a session
//     id, runs it;
//   - cancellation: notifications/cancelled ends the cancelled call's POST
//     stream, so its result is never sent (the SDK cancels the handler's
//     context but still writes the response).

// sessionKey carries the session made for an initialize POST to the SDK's
// getServer callback, which sees only the *http.Request. It never leaves
// this package.
type sessionKey struct{}

// inflightKey names a call in progress: its session and request id.
type inflightKey struct{ session, id string }

// methods are the client-to-server methods the SDK serves here; a call
// to any other is answered -32601 before it reaches the SDK.
var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true, "logging/setLevel": true,
}

// notifications are the client-to-server notifications the SDK handles;
// others are accepted and ignored.
var notifications = map[string]bool{
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// Handler serves MCP over streamable HTTP, one MCP server per session.
// Mount it at one path (toolshed serve: /mcp); it serves POST, GET and
// DELETE there.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if ms, ok := r.Context().Value(sessionKey{}).(*session); ok {
			return ms.srv
		}
		return s.stub // a request of an existing session: only its versions are read
	}, &mcp.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: s.opts.IdleTimeout,
		MaxRequestBodyBytes: s.opts.MaxBodyBytes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if sid != "" {
			tenant := s.opts.Tenant(r)
			ms := s.liveSession(sid)
			if ms != nil && subtle.ConstantTimeCompare([]byte(ms.tenant), []byte(tenant)) != 1 {
				ms = nil // another key's session: as if it did not exist
			}
			if s.opts.Store != nil {
				ms = s.shared(h, r, sid, tenant, ms) // store.go
			}
			if ms == nil {
				// Closed (DELETE, idle, evicted), never made, or another
				// tenant's: the client starts again with initialize (HTTP
				// 404, as the specification says).
				writeRPCError(w, http.StatusNotFound, jsonrpc.ID{}, -32001, "session not found (closed, or never started): send initialize to start a new one")
				return
			}
			ms.begin()
			defer ms.end()
		}
		switch r.Method {
		case http.MethodPost:
			s.post(h, w, r, sid)
		case http.MethodDelete:
			s.mu.Lock()
			ms := s.live[sid]
			s.mu.Unlock()
			if ms != nil {
				ms.setReason("deleted")
				// Ended for the fleet before the answer: the client's next
				// request, wherever it goes, finds it ended (store.go).
				s.released(ms, "deleted")
			}
			h.ServeHTTP(w, r)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// peeked is what Handler reads of one JSON-RPC message.
type peeked struct {
	method string
	id     jsonrpc.ID // valid for a call
	call   bool
	params json.RawMessage
}

// peek reads a POST body's messages: one, or a batch.
func peek(body []byte) ([]peeked, bool, error) {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	batch := len(body) > 0 && body[0] == '['
	if batch {
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, true, err
		}
	} else {
		raws = []json.RawMessage{body}
	}
	var out []peeked
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, batch, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			out = append(out, peeked{method: req.Method, id: req.ID, call: req.IsCall(), params: req.Params})
		} else {
			out = append(out, peeked{}) // a response to a server request (sampling)
		}
	}
	return out, batch, nil
}

func (s *Server) post(h http.Handler, w http.ResponseWriter, r *http.Request, sid string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "the request body could not be read")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	msgs, batch, err := peek(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, "not a JSON-RPC 2.0 message: "+oneLine(err.Error()))
		return
	}
	if batch && (sid == "" || r.Header.Get("Mcp-Protocol-Version") >= "2025-06-18") {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"JSON-RPC batches are not supported (MCP 2025-06-18 and later, and initialize)")
		return
	}
	if sid == "" {
		if len(msgs) != 1 || msgs[0].method != "initialize" || !msgs[0].call {
			id := jsonrpc.ID{}
			if len(msgs) == 1 {
				id = msgs[0].id
			}
			writeRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest,
				"Bad Request: no Mcp-Session-Id header; start a session with initialize")
			return
		}
		s.initialize(h, w, r, msgs[0].id)
		return
	}
	if !batch {
		m := msgs[0]
		switch {
		case m.call && !methods[m.method]:
			writeRPCError(w, http.StatusOK, m.id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q not found", m.method))
			return
		case !m.call && m.method != "" && !notifications[m.method]:
			// A notification nobody here handles is ignored, as JSON-RPC
			// has it (the SDK would answer 400).
			w.WriteHeader(http.StatusAccepted)
			return
		case m.method == "notifications/cancelled":
			s.cancelInflight(sid, m.params)
		case m.call:
			// The call's POST stream ends if the client cancels it, and
			// nothing more is written to it from then on: a call that
			// returns at once on its cancellation (one waiting for an
			// instance) would otherwise race its result onto the stream.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			sw := &stoppableWriter{ResponseWriter: w}
			w = sw
			key := inflightKey{sid, idString(m.id)}
			s.mu.Lock()
			s.inflight[key] = func() { sw.stop(); cancel() }
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
			}()
			r = r.WithContext(ctx)
		}
	}
	h.ServeHTTP(w, r)
}

// cancelInflight ends the POST stream of the call a notifications/cancelled
// names, before the SDK sees the notification (which cancels the call's
// handler): the result, written later, finds no stream and is dropped.
func (s *Server) cancelInflight(sid string, params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[inflightKey{sid, idString(id)}]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// stoppableWriter is a call's POST response that writes nothing once
// stopped (the client cancelled the call). It is safe for concurrent use.
type stoppableWriter struct {
	http.ResponseWriter
	mu      sync.Mutex
	stopped bool
}

func (w *stoppableWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

func (w *stoppableWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *stoppableWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return 0, errCallCancelled
	}
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController calls (the SDK flushes
// through one).
func (w *stoppableWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return errCallCancelled
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for callers that assert http.Flusher.
func (w *stoppableWriter) Flush() { w.FlushError() }

var errCallCancelled = errors.New("the client cancelled the call")

func idString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s" + v
	case int64:
		return "n" + strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(id.Raw())
}

// initialize admits a new session, or refuses it when MaxSessions are
// alive or its tenant holds its share (MaxSessionsPerTenant). The slot is
// held from here until the session closes.
func (s *Server) initialize(h http.Handler, w http.ResponseWriter, r *http.Request, id jsonrpc.ID) {
	tenant := s.opts.Tenant(r)
	sid := rand.Text() // the session's id from here (the store counts it before the SDK makes it)
	admit := func() (bool, bool) { return s.admit(tenant) }
	if s.opts.Store != nil {
		admit = func() (bool, bool) { return s.admitShared(r, sid, tenant) }
	}
	if ok, atShare := admit(); !ok {
		w.Header().Set("Retry-After", "5")
		if atShare {
			s.opts.Metrics.MCPKeyRefused()
			writeRPCError(w, http.StatusTooManyRequests, id, -32000,
				fmt.Sprintf("this API key has %d MCP sessions open, its share (server.per_key.mcp_sessions); "+
					"close sessions it no longer uses (HTTP DELETE), or try again later", s.opts.MaxSessionsPerTenant))
			return
		}
		s.opts.Metrics.MCPRefused()
		writeRPCError(w, http.StatusServiceUnavailable, id, -32000,
			fmt.Sprintf("too many MCP sessions (%d alive, the limit: server.mcp.max_sessions); try again later", s.opts.MaxSessions))
		return
	}
	ms := s.startSession(tenant)
	ms.store.mu.Lock()
	ms.store.sid = sid
	ms.store.mu.Unlock()
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, ms)))

	ms.mu.Lock()
	ss := ms.ss
	ms.mu.Unlock()
	if ss == nil || ss.InitializeParams() == nil {
		// Initialize failed (the SDK has closed the session) or never ran.
		if ss != nil {
			s.mu.Lock()
			delete(s.live, ss.ID())
			s.mu.Unlock()
		}
		ms.setReason("failed")
		ms.close()
		return
	}
	timer := time.AfterFunc(s.opts.InitTimeout, func() {
		ms.mu.Lock()
		ok := ms.initialized
		ms.mu.Unlock()
		if !ok {
			ms.setReason("init_timeout")
			s.opts.Logger.Info("mcp session dropped: no notifications/initialized", "session", sid, "after", s.opts.InitTimeout)
			ss.Close()
		}
	})
	go func() {
		ss.Wait()
		timer.Stop()
		s.mu.Lock()
		delete(s.live, sid)
		s.mu.Unlock()
		ms.close()
	}()
}

// startSession makes a session of tenant that holds one of this replica's
// counts (taken by the caller: admit, admitShared, adopt); they are freed
// when it closes, and, with a store, its slots there when it ended for
// good (released).
func (s *Server) startSession(tenant string) *session {
	endGauge, endKey := s.opts.Metrics.SessionStarted("mcp"), s.opts.Metrics.MCPKeySession(tenant)
	var ms *session
	ms = s.newSession(tenant, func() { // once (newSession)
		endGauge()
		endKey()
		s.mu.Lock()
		s.admitted--
		if s.byTenant[tenant]--; s.byTenant[tenant] <= 0 {
			delete(s.byTenant, tenant)
		}
		s.mu.Unlock()
		ms.mu.Lock()
		reason := ms.reason
		ms.mu.Unlock()
		s.released(ms, reason)
	})
	if s.opts.Store != nil {
		ms.srv.AddReceivingMiddleware(ms.storeMiddleware)
	}
	return ms
}

// admit takes a slot for a session of tenant: one of MaxSessions and one
// of the tenant's share. When either is full, the session idle longest
// that may be evicted (EvictAfter) is closed to make room, once: the
// tenant's own when its share is full, else any. atShare: the refusal is
// the tenant's share's.
func (s *Server) admit(tenant string) (ok, atShare bool) {
	for try := 0; ; try++ {
		s.mu.Lock()
		share := s.opts.MaxSessionsPerTenant
		atShare = share > 0 && s.byTenant[tenant] >= share
		if !atShare && s.admitted < s.opts.MaxSessions {
			s.admitted++
			s.byTenant[tenant]++
			s.mu.Unlock()
			return true, false
		}
		var victim *session
		if try == 0 {
			victim = s.idlest(tenant, atShare)
		}
		s.mu.Unlock()
		if victim == nil {
			return false, atShare
		}
		s.evict(victim)
	}
}

// evict closes a session to make room for a new one.
func (s *Server) evict(victim *session) {
	victim.setReason("evicted")
	victim.ended() // its slots are the new one's now
	s.opts.Logger.Info("mcp session evicted for a new one", "session", victim.id(), "idle", time.Since(victim.seen()).Round(time.Second))
	victim.mu.Lock()
	ss := victim.ss
	victim.mu.Unlock()
	ss.Close()
}

// idlest is the live session idle longest, with no request in progress
// for at least EvictAfter (of tenant alone when own); nil when there is
// none. Called under s.mu.
func (s *Server) idlest(tenant string, own bool) *session {
	if s.opts.EvictAfter < 0 {
		return nil
	}
	var best *session
	var bestSeen time.Time
	bestID := ""
	for sid, ms := range s.live {
		if own && ms.tenant != tenant {
			continue
		}
		ms.mu.Lock()
		seen, busy := ms.lastSeen, ms.inProgress > 0 || ms.ss == nil
		ms.mu.Unlock()
		if busy || time.Since(seen) < s.opts.EvictAfter {
			continue
		}
		// The oldest; ties by id, so the choice does not follow map order.
		if best == nil || seen.Before(bestSeen) || (seen.Equal(bestSeen) && sid < bestID) {
			best, bestSeen, bestID = ms, seen, sid
		}
	}
	return best
}

func (ms *session) begin() {
	ms.mu.Lock()
	ms.inProgress++
	ms.mu.Unlock()
}

func (ms *session) end() {
	ms.mu.Lock()
	ms.inProgress--
	ms.lastSeen = time.Now()
	ms.mu.Unlock()
}

func (ms *session) seen() time.Time {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.lastSeen
}

func (ms *session) id() string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.ss == nil {
		return ""
	}
	return ms.ss.ID()
}

// writeRPCError answers with a JSON-RPC error response (id null when the
// request's id is unknown).
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	resp := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id.Raw()}
	resp.Error.Code, resp.Error.Message = code, msg
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
