// Package mcpserver serves a host.Host's tools over the Model Context
// Protocol, with the official Go SDK: over streamable HTTP (Server.Handler,
// for toolshed serve or an embedder's own mux) and over stdio
// (Server.RunStdio, for toolshed mcp).
//
// Each MCP session is one host.Session: a new client sees the always-on
// tools and tool_search; what tool_search finds is added to that session
// alone, announced with notifications/tools/list_changed.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/metrics"
	"github.com/toolshed/toolshed/internal/buildinfo"
	"github.com/toolshed/toolshed/internal/sessionstore"
)

// ProtocolVersions are the MCP revisions served, newest first. The
// 2026-07-28 revision is stateless (no session to hold a client's
// discovered tools), so Toolshed negotiates the newest stateful one;
// current clients fall back to it.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Options configure a Server; nil means the defaults. They are copied by
// New.
type Options struct {
	// Logger logs sessions and tool calls; nil: none.
	Logger *slog.Logger
	// Metrics, when set, records sessions and tool calls.
	Metrics *metrics.Metrics
	// MaxSessions bounds the HTTP sessions alive at once, counted from
	// their initialize request; initialize beyond it is refused with a
	// JSON-RPC error (HTTP 503). Default 256.
	MaxSessions int
	// MaxSessionsPerTenant bounds the HTTP sessions of one tenant
	// (Options.Tenant) alive at once, so that one API key cannot hold
	// every slot of MaxSessions: its next initialize closes its own
	// session idle longest (as EvictAfter says), else is refused with a
	// JSON-RPC error (HTTP 429) while other tenants still get in. 0: no
	// share, MaxSessions alone.
	MaxSessionsPerTenant int
	// InitTimeout drops an HTTP session whose client answered initialize
	// but sent no notifications/initialized within it. Default 10 seconds.
	InitTimeout time.Duration
	// IdleTimeout closes an HTTP session that sent no request for this
	// long (the SDK's StreamableHTTPOptions.SessionTimeout). Default 30
	// minutes.
	IdleTimeout time.Duration
	// EvictAfter: when MaxSessions are alive, an initialize closes the
	// session idle longest, if it has had no request in progress for at
	// least this long, instead of being refused (clients that leave
	// without DELETE do not lock others out until IdleTimeout). Default 1
	// minute; negative: never.
	EvictAfter time.Duration
	// MaxBodyBytes bounds one HTTP request body and one stdio line.
	// Default 4 MiB.
	MaxBodyBytes int64
	// Version is serverInfo.version. Default: the build's version
	// (buildinfo.Version).
	Version string
	// Artifacts serves resources/read of toolshed://artifacts/ID; nil: no
	// resources (artifacts still come as content of their call's result).
	Artifacts *artifact.Store
	// Dispatcher adds call_tool(name, arguments) to every session, for
	// clients that ignore notifications/tools/list_changed (dispatch.go).
	Dispatcher bool
	// InlineBytes: an artifact up to this size is sent inside its call's
	// result (image or embedded resource); a larger one as a resource
	// link. 0: 256 KiB; negative: always a link.
	InlineBytes int64
	// Tenant names whom an HTTP request comes from (toolshed serve: a
	// hash of its API key). A session belongs to the tenant of its
	// initialize: a request of another tenant naming its Mcp-Session-Id
	// is answered as for an unknown session (HTTP 404). Nil: one tenant.
	Tenant func(r *http.Request) string
	// Store, when set, keeps the HTTP sessions and their counts where
	// every replica finds them, so that any replica serves any request
	// of any session and MaxSessions and MaxSessionsPerTenant hold for
	// the fleet (store.go). Nil: this process's memory alone.
	Store sessionstore.Store
}

// Server serves MCP sessions over one host.Host. It is safe for
// concurrent use.
type Server struct {
	host *host.Host
	opts Options
	// stub answers the HTTP handler's look-ups for requests of existing
	// sessions (it only reads the protocol versions).
	stub *mcp.Server

	mu       sync.Mutex
	admitted int                    // HTTP sessions from initialize to close
	byTenant map[string]int         // of admitted, each tenant's (none at 0)
	inflight map[inflightKey]func() // cancels of the POSTs of calls in progress
	live     map[string]*session    // initialized HTTP sessions by id
	fleet    fleetState             // with a Store (store.go)
}

// New returns the MCP front end of h.
func New(h *host.Host, opts *Options) *Server {
	s := &Server{host: h, inflight: map[inflightKey]func(){}, live: map[string]*session{}, byTenant: map[string]int{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.opts.Logger = redactingLogger(s.opts.Logger) // no session id in a log (logging.go)
	if s.opts.MaxSessions <= 0 {
		s.opts.MaxSessions = 256
	}
	s.opts.MaxSessionsPerTenant = max(s.opts.MaxSessionsPerTenant, 0)
	if s.opts.InitTimeout <= 0 {
		s.opts.InitTimeout = 10 * time.Second
	}
	if s.opts.IdleTimeout <= 0 {
		s.opts.IdleTimeout = 30 * time.Minute
	}
	if s.opts.EvictAfter == 0 {
		s.opts.EvictAfter = time.Minute
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = 4 << 20
	}
	if s.opts.InlineBytes == 0 {
		s.opts.InlineBytes = 256 << 10
	}
	if s.opts.Version == "" {
		s.opts.Version = buildinfo.Version()
	}
	if s.opts.Tenant == nil {
		s.opts.Tenant = func(*http.Request) string { return "" }
	}
	s.stub = mcp.NewServer(s.implementation(), &mcp.ServerOptions{Logger: s.opts.Logger, SupportedProtocolVersions: ProtocolVersions})
	return s
}

func (s *Server) implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: "toolshed", Title: "Toolshed", Version: s.opts.Version}
}

// Sessions reports the HTTP sessions admitted (from initialize) and not
// yet closed.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted
}

// session is one MCP client session: its host Session and the tools
// registered on its server (always-on, tool_search, then discoveries).
// It is safe for concurrent use.
type session struct {
	front  *Server
	hs     *host.Session
	srv    *mcp.Server
	tenant string // whose session it is (Options.Tenant of its initialize)
	store  storeState

	mu          sync.Mutex
	registered  map[string]bool
	ss          *mcp.ServerSession // set by initialize
	initialized bool               // notifications/initialized came
	closeOnce   sync.Once
	reason      string    // why it ended, for the metrics
	ended       func()    // frees what the session holds (slot, gauge); runs once
	lastSeen    time.Time // the end of its last HTTP request
	inProgress  int       // its HTTP requests in progress (a GET stream too)
}

// newSession is the MCP server of one new client session of tenant
// (Options.Tenant of its initialize; "" over stdio); ended runs once when
// it closes. Its host session runs for the tenant: its plugin instances
// and database queries count against that key's shares, as a chat
// request's do.
func (s *Server) newSession(tenant string, ended func()) *session {
	ms := &session{front: s, hs: s.host.Tenant(tenant).NewSession(), tenant: tenant, registered: map[string]bool{}, ended: sync.OnceFunc(ended), reason: "ended",
		lastSeen: time.Now()}
	ms.srv = mcp.NewServer(s.implementation(), &mcp.ServerOptions{
		Instructions: host.DefaultSystemPrompt,
		Logger:       s.opts.Logger,
		// The SDK would announce each addition to the list itself, ~10 ms
		// later and outside any request: only a client with a standalone
		// GET stream would get it. Its own notifications are off here
		// (listChanged is still advertised, see onInitialize); the call
		// that changes the list sends the notification within itself
		// (notifyListChanged).
		// Logging: plugins granted client.log send notifications/message
		// (client.go).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}, Logging: &mcp.LoggingCapabilities{}},
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) {
			ms.mu.Lock()
			ms.initialized = true
			ms.mu.Unlock()
		},
		SupportedProtocolVersions: ProtocolVersions,
		GetSessionID:              ms.sessionID, // store.go
	})
	ms.srv.AddReceivingMiddleware(ms.onInitialize, ms.refuseUnknown)
	s.addArtifactResources(ms.srv)
	if s.opts.Dispatcher {
		ms.addDispatcher()
	}
	ms.srv.AddSendingMiddleware(listChangedMiddleware)
	ms.sync()
	return ms
}

// close ends the host session and frees what the session held, once.
func (ms *session) close() {
	ms.closeOnce.Do(func() {
		ms.hs.Close()
		ms.mu.Lock()
		reason := ms.reason
		ms.mu.Unlock()
		ms.front.opts.Metrics.MCPClosed(reason)
		ms.ended()
	})
}

func (ms *session) setReason(r string) {
	ms.mu.Lock()
	ms.reason = r
	ms.mu.Unlock()
}

// onInitialize keeps the session's ServerSession and advertises
// tools.listChanged (see newSession).
func (ms *session) onInitialize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			ms.mu.Lock()
			ms.ss = ss
			ms.lastSeen = time.Now()
			ms.mu.Unlock()
			if id := ss.ID(); id != "" {
				// Known from here on: the client may send its next request
				// as soon as it reads this result.
				ms.front.mu.Lock()
				ms.front.live[id] = ms
				ms.front.mu.Unlock()
			}
		}
		if ir, ok := res.(*mcp.InitializeResult); ok && ir.Capabilities != nil {
			c := *ir.Capabilities
			c.Tools = &mcp.ToolCapabilities{ListChanged: true}
			ir.Capabilities = &c
		}
		return res, nil
	}
}

// listChangedToken marks the progress notification listChangedMiddleware
// turns into notifications/tools/list_changed.
type listChangedMarker struct{}

var listChangedToken = &listChangedMarker{}

// notifyListChanged sends notifications/tools/list_changed within the
// request of ctx, before its result: over streamable HTTP on that POST's
// response stream (or, when the response is plain JSON, the GET stream),
// over stdio before the result's line. The SDK exports no way to send a
// list_changed notification on a request's context, only progress
// notifications; one carrying a private token is rewritten by
// listChangedMiddleware on its way out.
func notifyListChanged(ctx context.Context, ss *mcp.ServerSession) error {
	return ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: listChangedToken})
}

func listChangedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/progress" {
			if p, ok := req.GetParams().(*mcp.ProgressNotificationParams); ok && p.ProgressToken == any(listChangedToken) {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				return next(ctx, "notifications/tools/list_changed",
					&mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{}})
			}
		}
		return next(ctx, method, req)
	}
}

// sync registers the session's tools not yet on its server and reports
// whether it added any.
func (ms *session) sync() bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	added := false
	for _, t := range ms.hs.Tools() {
		name := t.Function.Name
		if ms.registered[name] {
			continue
		}
		ms.registered[name] = true
		added = true
		schema, _ := t.Function.Parameters.(json.RawMessage)
		ms.srv.AddTool(mcpTool(name, t.Function.Description, schema, ms.hs.ToolInfo(name)), ms.call)
	}
	return added
}

// mcpTool is a tool as MCP lists it: the function definition the model
// sees, with the title, annotations and output schema the model does not.
func mcpTool(name, desc string, params json.RawMessage, info host.ToolInfo) *mcp.Tool {
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: params, Title: info.Title}
	if len(info.OutputSchema) > 0 {
		t.OutputSchema = info.OutputSchema
	}
	if a := info.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint,
			ReadOnlyHint: a.ReadOnlyHint != nil && *a.ReadOnlyHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint}
	}
	return t
}

// refuseUnknown answers a call to a tool this session has not discovered
// the way the agent loop does (a tool error that says to search), instead
// of a protocol error.
func (ms *session) refuseUnknown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok {
			return next(ctx, method, req)
		}
		ms.mu.Lock()
		known := ms.registered[p.Name]
		ms.mu.Unlock()
		if known {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		res, _ := ms.hs.Call(withClient(ctx, ss, p), p.Name, toolArgs(p.Arguments))
		ms.front.opts.Metrics.ObserveCall(&host.ToolCallRecord{Name: p.Name, Plugin: ms.hs.PluginOf(p.Name), IsError: true})
		return ms.front.result(res), nil
	}
}

// call runs one tool call of the session.
func (ms *session) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, args := req.Params.Name, toolArgs(req.Params.Arguments)
	start := time.Now()
	var res host.Result
	var rec *host.SearchRecord
	if name == host.ToolSearchName {
		canSample := clientSamples(req.Session)
		var p *host.PendingSearch
		p, res, rec = ms.hs.BeginSearch(args, canSample)
		if p != nil {
			text, err := sample(ctx, req.Session, p)
			res, rec = p.Complete(text, err)
		}
		if ms.sync() {
			if err := notifyListChanged(ctx, req.Session); err != nil {
				ms.front.opts.Logger.Debug("mcp list_changed not delivered", "session", req.Session.ID(), "error", err)
			}
		}
	} else {
		res, rec = ms.hs.Call(withClient(ctx, req.Session, req.Params), name, args)
	}
	ms.front.opts.Metrics.ObserveCall(&host.ToolCallRecord{Name: name, Plugin: ms.hs.PluginOf(name), IsError: res.IsError,
		Duration: time.Since(start), Search: rec})
	ms.front.opts.Logger.Debug("mcp tool call", "session", req.Session.ID(), "tool", name, "is_error", res.IsError, "took", time.Since(start))
	return ms.front.result(res), nil
}

// result is a call's result as MCP sends it: the text, its artifacts,
// and its structured content when it is an object.
func (s *Server) result(res host.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}
	for _, a := range res.Artifacts {
		out.Content = append(out.Content, s.artifactContent(a))
	}
	if s := strings.TrimSpace(string(res.Structured)); strings.HasPrefix(s, "{") {
		out.StructuredContent = json.RawMessage(s)
	}
	return out
}

// clientSamples reports whether the client offers sampling (its model).
func clientSamples(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Sampling != nil
}

// sample asks the client's model to choose among the candidate tools.
func sample(ctx context.Context, ss *mcp.ServerSession, p *host.PendingSearch) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{SystemPrompt: p.System, MaxTokens: 400,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: p.Prompt}}}})
	if err != nil {
		return "", fmt.Errorf("the client's model (sampling): %w", err)
	}
	if t, ok := res.Content.(*mcp.TextContent); ok {
		return t.Text, nil
	}
	return "", errors.New("the client's model (sampling) answered with no text")
}
