package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/host/metrics"
	"github.com/toolshed/toolshed/host/openaiapi"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/redisurl"
	"github.com/toolshed/toolshed/internal/sessionstore"
	"github.com/toolshed/toolshed/search"
)

// server is toolshed serve: the catalog endpoints, the OpenAI-compatible
// agent endpoint, MCP over streamable HTTP and metrics, over one live
// catalog and one plugin runtime. Handlers are safe for concurrent use.
type server struct {
	cfg     config.Server
	live    *catalog.Live
	runtime *wasm.Host
	agent   *agent // nil: no agent endpoints (tests of the catalog endpoints)
	metrics *metrics.Metrics
	openai  *openaiapi.Server
	mcp     http.Handler
	log     *slog.Logger
	// stopping is closed when shutdown begins: long-lived MCP streams end,
	// requests in progress drain.
	stopping chan struct{}
	sync     *oci.Syncer         // registry.sources; nil when none
	store    *sessionstore.Redis // server.sessions.store; nil when none
}

type pluginStatus struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Manifest string   `json:"manifest"`
	Tools    []string `json:"tools"`
	State    string   `json:"state"` // ready, compiling, failed, not compiled
	Error    string   `json:"error,omitempty"`
	SHA256   string   `json:"sha256"`           // the module it runs
	Digest   string   `json:"digest,omitempty"` // its OCI digest, when pulled from a registry
	Source   string   `json:"source,omitempty"` // the reference it was pulled from

	// Pending: an update half written (catalog.Plugin.Pending).
	Pending string `json:"pending,omitempty"`
}

func (s *server) routes() http.Handler {
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.stopping == nil {
		s.stopping = make(chan struct{})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", readyzHandler(func() (bool, string) { return readiness(s.live, s.sync, s.stopping) }))
	mux.HandleFunc("GET /v1/plugins", s.plugins)
	mux.HandleFunc("GET /v1/search", s.search)
	if s.openai != nil {
		s.openai.Register(mux)
	}
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.Handler())
	}
	if s.mcp != nil {
		mux.Handle("/mcp", s.mcpStreams(s.mcp))
	}
	return withRequestID(s.instrument(s.authenticate(s.protect(jsonMisses(mux)))))
}

// withRequestID gives every response an x-request-id (as OpenAI's do),
// the one the server's log records for it.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 12)
		rand.Read(b)
		w.Header().Set("X-Request-Id", "req_"+hex.EncodeToString(b))
		next.ServeHTTP(w, r)
	})
}

// requestID is the id withRequestID gave the response.
func requestID(w http.ResponseWriter) string { return w.Header().Get("X-Request-Id") }

// tenant is whom a request runs for: the SHA-256 of its API key when keys
// are configured (authenticate has checked it), "" otherwise. Continuation
// ids and MCP sessions are bound to it: one key cannot use another's.
func (s *server) tenant(r *http.Request) string {
	if len(s.cfg.APIKeys) == 0 {
		return ""
	}
	auth := r.Header.Get("Authorization")
	if len(auth) < 7 || !strings.EqualFold(auth[:7], "Bearer ") {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(auth[7:])))
	return hex.EncodeToString(sum[:])
}

// jsonMisses answers what the mux does not route (404, 405) in the OpenAI
// error shape instead of plain text.
func jsonMisses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		miss := &missWriter{header: http.Header{}}
		h.ServeHTTP(miss, r)
		if allow := miss.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if miss.status == http.StatusMethodNotAllowed {
			openaiapi.WriteError(w, http.StatusMethodNotAllowed, openaiapi.Error{Type: "invalid_request_error", Code: "method_not_allowed",
				Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, miss.header.Get("Allow"))})
			return
		}
		openaiapi.WriteError(w, http.StatusNotFound, openaiapi.Error{Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("unknown request URL: %s %s", r.Method, r.URL.Path)})
	})
}

// missWriter keeps what the mux's own 404/405 handler writes.
type missWriter struct {
	header http.Header
	status int
}

func (m *missWriter) Header() http.Header         { return m.header }
func (m *missWriter) Write(b []byte) (int, error) { return len(b), nil }
func (m *missWriter) WriteHeader(code int)        { m.status = code }

// protect refuses what a browser page could make a local server do: a
// Host that is not loopback on a loopback listener (DNS rebinding),
// cross-origin requests that change state, and chat completions that are
// not JSON (so a page cannot post them without a CORS preflight).
func (s *server) protect(next http.Handler) http.Handler {
	loopback := s.cfg.Addr == "" || config.IsLoopback(s.cfg.Addr)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusForbidden, "invalid_request_error", "cross-origin request refused")
	}))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback && !config.IsLoopback(r.Host) {
			apiError(w, http.StatusForbidden, "invalid_request_error",
				fmt.Sprintf("Host %q is not a loopback name: this server listens on loopback only (DNS rebinding protection)", r.Host))
			return
		}
		if r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/responses") {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				apiError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "Content-Type must be application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return cop.Handler(inner)
}

// bodyDeadline bounds how long a request body may take to arrive; the
// deadline is lifted once the body is read, so responses may stream.
const bodyDeadline = 60 * time.Second

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// instrument limits request bodies and counts requests by endpoint.
func (s *server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		if s.cfg.MaxBodyBytes > 0 {
			r.Body = http.MaxBytesReader(sw, r.Body, s.cfg.MaxBodyBytes)
		}
		if r.Method == http.MethodPost {
			rc := http.NewResponseController(sw)
			if rc.SetReadDeadline(time.Now().Add(bodyDeadline)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		start := time.Now()
		next.ServeHTTP(sw, r)
		if s.metrics != nil {
			endpoint := r.Pattern
			if endpoint == "" {
				endpoint = "unmatched"
			}
			s.metrics.ObserveHTTP(endpoint, sw.code(), time.Since(start))
		}
	})
}

// authenticate requires one of the API keys as a bearer token on every
// endpoint, when keys are configured.
func (s *server) authenticate(next http.Handler) http.Handler {
	if len(s.cfg.APIKeys) == 0 {
		return next
	}
	var sums [][32]byte
	for _, k := range s.cfg.APIKeys {
		sums = append(sums, sha256.Sum256([]byte(k)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probePath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		ok := len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ")
		token := ""
		if ok {
			token = auth[7:]
		}
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		match := 0
		for _, sum := range sums {
			match |= subtle.ConstantTimeCompare(got[:], sum[:])
		}
		if !ok || match != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshed"`)
			openaiapi.WriteError(w, http.StatusUnauthorized, openaiapi.Error{Type: "invalid_request_error", Code: "invalid_api_key",
				Message: "a valid API key is required: Authorization: Bearer KEY"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpStreams ends long-lived MCP streams (GET) when shutdown begins, so
// they do not hold the drain; POSTs finish normally.
func (s *server) mcpStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			go func() {
				select {
				case <-s.stopping:
					cancel()
				case <-ctx.Done():
				}
			}()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status code; Unwrap lets
// http.ResponseController reach Flush.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (s *server) plugins(w http.ResponseWriter, r *http.Request) {
	snap := s.live.Snapshot()
	out := struct {
		Generation uint64             `json:"generation"`
		Dir        string             `json:"dir"`
		Plugins    []pluginStatus     `json:"plugins"`
		Errors     []errorJSON        `json:"errors"`
		Sources    []oci.SourceStatus `json:"sources,omitempty"`
	}{snap.Generation, snap.Dir, []pluginStatus{}, []errorJSON{}, nil}
	if s.sync != nil {
		out.Sources = s.sync.Status()
	}
	for _, p := range snap.Plugins {
		st := pluginStatus{Name: p.Name(), Version: p.Manifest.Version, Manifest: p.ManifestPath, Tools: []string{}, SHA256: p.Manifest.SHA256,
			Pending: p.Pending}
		st.Digest, st.Source = runningDigest(p)
		for _, t := range p.Tools {
			st.Tools = append(st.Tools, t.Name())
		}
		var err error
		st.State, err = s.runtime.PluginState(p)
		if err != nil {
			st.Error = err.Error()
		}
		out.Plugins = append(out.Plugins, st)
	}
	for _, e := range snap.Errors {
		out.Errors = append(out.Errors, errorJSON{File: e.File, Error: e.Error()})
	}
	openaiapi.WriteJSON(w, http.StatusOK, out)
}

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		openaiapi.HTTPError(w, http.StatusBadRequest, "the query parameter q is required: /v1/search?q=...")
		return
	}
	limit := search.DefaultLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			openaiapi.HTTPError(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	snap := s.live.Snapshot()
	res, err := snap.Search(q, limit)
	if err != nil {
		openaiapi.HTTPError(w, http.StatusBadRequest, err.Error())
		return
	}
	openaiapi.WriteJSON(w, http.StatusOK, struct {
		Results []searchResult `json:"results"`
		Unknown []string       `json:"unknown,omitempty"`
	}{searchResults(snap, res), res.Unknown})
}

// newServer makes the server of a configuration: live catalog, plugin
// runtime, agent, metrics and MCP front. close releases them.
func newServer(cfg *config.Config, log *slog.Logger, stderr io.Writer) (*server, error) {
	if err := registryDir(cfg); err != nil {
		return nil, err
	}
	var rt *wasm.Host
	var mu sync.Mutex
	live, err := catalog.NewLive(cfg.Plugins.Dir, catalog.LiveOptions{Search: admission(nil), Logger: log, OnChange: func(_, snap *catalog.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		if rt != nil {
			rt.Sync(snap)
		}
	}})
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.Server.PublicURL, "/")
	if base == "" {
		base = "http://" + cfg.Server.Addr
	}
	artifactURL := func(a artifact.Artifact) string { return base + "/v1/artifacts/" + a.ID }
	ag, err := newAgent(cfg, live.Snapshot, log, stderr, false, artifactURL)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	rt = ag.runtime
	mu.Unlock()
	s := &server{cfg: cfg.Server, live: live, runtime: rt, agent: ag, log: log, stopping: make(chan struct{})}
	s.metrics = metrics.New(metrics.Options{Runtime: rt, Catalog: live, Known: ag.host.HasTool, SQL: ag.op.sql, Artifacts: ag.artifacts})
	s.openai = openaiapi.New(ag.host, &openaiapi.Options{Upstream: ag.client, NoModel: errNoModel.Error(),
		RequestTimeout: cfg.Server.RequestTimeout, MaxConcurrent: cfg.Server.MaxConcurrent,
		Metrics: s.metrics, Logger: log, RequestID: requestID,
		Artifacts: ag.artifacts, ArtifactURL: artifactURL, InlineBytes: int64(cfg.Artifacts.InlineKB) << 10, Tenant: s.tenant,
		KeepResponses: cfg.Server.Responses.Keep, KeepFor: cfg.Server.Responses.KeepFor})
	var store sessionstore.Store
	if u := cfg.Server.Sessions.Store; u != "" {
		// The store is not waited for: one that is down at start is
		// reported by the first session, and limits are per replica
		// meanwhile.
		so := &sessionstore.Options{Logger: log}
		if ca := cfg.Server.Sessions.CA; ca != "" {
			if so.RootCAs, err = redisurl.CAPool(ca); err != nil {
				ag.close()
				return nil, fmt.Errorf("server.sessions.ca: %w", err)
			}
		}
		if s.store, err = sessionstore.Open(u, so); err != nil {
			ag.close()
			return nil, err
		}
		if err := s.metrics.Register(s.store.Collectors()...); err != nil {
			s.store.Close()
			ag.close()
			return nil, err
		}
		store = s.store
		// Artifacts too: a link made here is served by every replica.
		ag.artifacts.Share(s.store, filepath.Join(dataDir(), "artifacts-shared"), 0)
		log.Info("mcp sessions and artifacts in a shared store: any replica serves any session and any artifact link", "store", sessionstore.Redact(u))
	}
	m := cfg.Server.MCP
	s.mcp = mcpserver.New(ag.host, &mcpserver.Options{Store: store, Logger: log, Metrics: s.metrics, MaxSessions: m.MaxSessions, MaxSessionsPerTenant: keySessions(cfg.Server),
		InitTimeout: m.InitTimeout, IdleTimeout: m.IdleTimeout, EvictAfter: evictAfter(m.EvictAfter), MaxBodyBytes: cfg.Server.MaxBodyBytes, Version: version,
		Artifacts: ag.artifacts, InlineBytes: inlineBytes(cfg.Artifacts.InlineKB), Dispatcher: m.Dispatcher, Tenant: s.tenant}).Handler()
	if s.sync, err = newRegistrySync(cfg, live, s.metrics, log); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *server) close() {
	s.agent.close()
	if s.store != nil {
		s.store.Close()
	}
}

// keySessions is server.per_key.mcp_sessions as mcpserver takes it: 0
// there is half of server.mcp.max_sessions (at least 1) when more than
// one API key is configured, else no share.
func keySessions(s config.Server) int {
	if n := s.PerKey.MCPSessions; n > 0 || len(s.APIKeys) < 2 {
		return n
	}
	return max(s.MCP.MaxSessions/2, 1)
}

// evictAfter is server.mcp.evict_after as mcpserver takes it (0 there is
// its default; never is negative).
func evictAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// inlineBytes is artifacts.inline_kb as mcpserver takes it (0 there is its
// default; never inline is negative).
func inlineBytes(kb int) int64 {
	if kb == 0 {
		return -1
	}
	return int64(kb) << 10
}

// sweepArtifacts removes artifacts past their retention every minute
// until ctx ends.
func sweepArtifacts(ctx context.Context, ag *agent, log *slog.Logger) {
	ag.artifacts.Run(ctx, time.Minute, func(n int, err error) {
		if err != nil {
			log.Warn("artifact cleanup", "removed", n, "error", err)
		} else {
			log.Info("artifacts past their retention removed", "removed", n)
		}
	})
}

// apiError answers in the OpenAI error shape, without param or code.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	openaiapi.WriteError(w, status, openaiapi.Error{Type: typ, Message: msg})
}

var serveFlagNames = []string{"addr", "plugins", "grants", "watch", "poll", "open", "base-url", "model",
	"search-mode", "search-model", "max-rounds", "workspace", "skills", "shell", "no-time", "no-todo", "log-format", "log-level"}

func cmdServe(args []string, stdout, stderr io.Writer) error {
	l, err := loadCommand("serve", "usage: toolshed serve [--config FILE] [--addr HOST:PORT] [--plugins DIR] [--base-url URL] [flags]",
		serveFlagNames, args, stderr)
	if err != nil {
		return err
	}
	cfg := &l.Config
	if !config.IsLoopback(cfg.Server.Addr) && len(cfg.Server.APIKeys) == 0 && !cfg.Server.AllowOpen {
		return fmt.Errorf("refusing to serve on %s, beyond loopback, without API keys: set server.api_keys "+
			"(TOOLSHED_SERVER_API_KEYS), or server.allow_open (--open) to run open on purpose", cfg.Server.Addr)
	}
	log := newConfigLogger(cfg.Log, stderr)
	s, err := newServer(cfg, log, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Plugins.Watch {
		p := cfg.Plugins.Poll
		if p == 0 {
			p = -1
		}
		go s.live.Watch(ctx, catalog.WatchOptions{Poll: p})
	}
	if s.sync != nil {
		go s.sync.Run(ctx)
	}
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
	go sweepArtifacts(ctx, s.agent, log)
	// Once shutdown begins, a second signal ends the process at once.
	context.AfterFunc(ctx, stop)
	return s.serve(ctx, ln, cfg, stdout)
}

// serve serves on ln until ctx ends, then drains: no new connections,
// long-lived MCP streams end, requests in progress get
// server.shutdown_timeout to finish.
func (s *server) serve(ctx context.Context, ln net.Listener, cfg *config.Config, stdout io.Writer) error {
	ag, live, log := s.agent, s.live, s.log
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		IdleTimeout: cfg.Server.IdleTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	upstream := "none (agent endpoint off: set model.base_url)"
	if ag.client != nil {
		upstream = cfg.Model.BaseURL + " (" + cfg.Model.Name + ")"
	}
	fmt.Fprintf(stdout, "toolshed serving %s from %s on http://%s\n  upstream model: %s\n  endpoints: POST /v1/chat/completions, POST /v1/responses, GET /v1/models, /mcp, GET /v1/artifacts/ID, GET /v1/plugins, /v1/search?q=, /metrics, /healthz, /readyz\n",
		plural(len(live.Snapshot().Tools), "tool"), cfg.Plugins.Dir, ln.Addr(), upstream)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests in progress", "grace", cfg.Server.ShutdownTimeout)
	close(s.stopping)
	shut, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		srv.Close()
		return fmt.Errorf("shutdown: requests still running after %s were cut off: %w", cfg.Server.ShutdownTimeout, err)
	}
	return nil
}
