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
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/metrics"
	"github.com/toolshed/toolshed/internal/buildinfo"
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
	// initialize; a new one beyond it is refused. Default 256.
	MaxSessions int
	// IdleTimeout closes an HTTP session that sent no request for this
	// long. Default 30 minutes.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds one HTTP request body. Default 4 MiB.
	MaxBodyBytes int64
	// Version is serverInfo.version. Default: the module version of the
	// build (buildinfo.Version).
	Version string
}

// Server serves MCP sessions over one host.Host. It is safe for
// concurrent use.
type Server struct {
	host *host.Host
	opts Options
	// stub answers the HTTP handler's look-ups for requests of existing
	// sessions (it only reads the protocol versions).
	stub *mcp.Server

	mu     sync.Mutex
	active int // HTTP sessions initialized and not yet closed
}

// New returns the MCP front end of h.
func New(h *host.Host, opts *Options) *Server {
	s := &Server{host: h}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.MaxSessions <= 0 {
		s.opts.MaxSessions = 256
	}
	if s.opts.IdleTimeout <= 0 {
		s.opts.IdleTimeout = 30 * time.Minute
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = 4 << 20
	}
	if s.opts.Version == "" {
		s.opts.Version = buildinfo.Version()
	}
	s.stub = mcp.NewServer(s.implementation(), &mcp.ServerOptions{Logger: s.opts.Logger, SupportedProtocolVersions: ProtocolVersions})
	return s
}

func (s *Server) implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: "toolshed", Title: "Toolshed", Version: s.opts.Version}
}

// Sessions reports the HTTP sessions initialized and not yet closed.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// session is one MCP client session: its host Session and the tools
// registered on its server (always-on, tool_search, then discoveries).
type session struct {
	front *Server
	hs    *host.Session
	srv   *mcp.Server

	mu         sync.Mutex
	registered map[string]bool
	closeOnce  sync.Once
	ended      func()
}

// newSession is the MCP server of one new client session.
func (s *Server) newSession() *session {
	ms := &session{front: s, hs: s.host.NewSession(), registered: map[string]bool{}, ended: func() {}}
	ms.srv = mcp.NewServer(s.implementation(), &mcp.ServerOptions{
		Instructions: host.DefaultSystemPrompt,
		Logger:       s.opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// A session counts from its initialized notification and ends
		// when its connection does (HTTP: DELETE, idle timeout, shutdown).
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			s.mu.Lock()
			s.active++
			s.mu.Unlock()
			done := s.opts.Metrics.SessionStarted("mcp")
			ms.mu.Lock()
			ms.ended = func() {
				done()
				s.mu.Lock()
				s.active--
				s.mu.Unlock()
			}
			ms.mu.Unlock()
			go func() { req.Session.Wait(); ms.close() }()
		},
		SupportedProtocolVersions: ProtocolVersions,
	})
	ms.srv.AddReceivingMiddleware(ms.refuseUnknown)
	ms.sync()
	return ms
}

func (ms *session) close() {
	ms.closeOnce.Do(func() {
		ms.hs.Close()
		ms.mu.Lock()
		ended := ms.ended
		ms.mu.Unlock()
		ended()
	})
}

// sync registers the session's tools not yet on its server; adding any
// makes the server send notifications/tools/list_changed.
func (ms *session) sync() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, t := range ms.hs.Tools() {
		name := t.Function.Name
		if ms.registered[name] {
			continue
		}
		ms.registered[name] = true
		schema, _ := t.Function.Parameters.(json.RawMessage)
		ms.srv.AddTool(&mcp.Tool{Name: name, Description: t.Function.Description, InputSchema: schema}, ms.call)
	}
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
		res, _ := ms.hs.Call(ctx, p.Name, string(p.Arguments))
		ms.front.opts.Metrics.ObserveCall(&host.ToolCallRecord{Name: p.Name, Plugin: ms.hs.PluginOf(p.Name), IsError: true})
		return result(res), nil
	}
}

// call runs one tool call of the session.
func (ms *session) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, args := req.Params.Name, string(req.Params.Arguments)
	if strings.TrimSpace(args) == "" || args == "null" {
		args = "{}"
	}
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
		ms.sync()
	} else {
		res, rec = ms.hs.Call(ctx, name, args)
	}
	ms.front.opts.Metrics.ObserveCall(&host.ToolCallRecord{Name: name, Plugin: ms.hs.PluginOf(name), IsError: res.IsError,
		Duration: time.Since(start), Search: rec})
	ms.front.opts.Logger.Debug("mcp tool call", "session", req.Session.ID(), "tool", name, "is_error", res.IsError, "took", time.Since(start))
	return result(res), nil
}

func result(res host.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}
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

// Handler serves MCP over streamable HTTP, one MCP server per session. A
// new session beyond MaxSessions live ones is refused (503).
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			return s.stub // a request of an existing session, or none
		}
		return s.newSession().srv
	}, &mcp.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: s.opts.IdleTimeout, MaxRequestBodyBytes: s.opts.MaxBodyBytes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && s.Sessions() >= s.opts.MaxSessions {
			http.Error(w, fmt.Sprintf("too many MCP sessions (%d); close one or try later", s.opts.MaxSessions), http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// RunStdio serves one session over r and w (a client that started this
// process) until the client leaves or ctx ends. Only MCP is written to w.
func (s *Server) RunStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	ms := s.newSession()
	defer ms.close()
	err := ms.srv.Run(ctx, &mcp.IOTransport{Reader: nopReadCloser{r}, Writer: nopWriteCloser{w}})
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil
	}
	return err
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
