package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/config"
)

// mcpVersions are the MCP revisions served. The 2026-07-28 revision is
// stateless (no session to hold a client's discovered tools), so Toolshed
// negotiates the newest stateful one; current clients fall back to it.
var mcpVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// mcpFront serves the agent's tools over MCP: each MCP session is one
// host Session, so discoveries stay with the client that made them.
// It is safe for concurrent use.
type mcpFront struct {
	agent   *agent
	metrics *metrics
	log     *slog.Logger
	// stub answers the HTTP handler's look-ups for requests of existing
	// sessions (it only reads the protocol versions).
	stub *mcp.Server

	mu     sync.Mutex
	active int // sessions initialized and not yet closed
}

func newMCPFront(ag *agent, m *metrics, log *slog.Logger) *mcpFront {
	f := &mcpFront{agent: ag, metrics: m, log: log}
	f.stub = mcp.NewServer(&mcp.Implementation{Name: "toolshed", Version: version},
		&mcp.ServerOptions{Logger: log, SupportedProtocolVersions: mcpVersions})
	return f
}

// sessions reports the MCP sessions initialized and not yet closed.
func (f *mcpFront) sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

// mcpSession is one MCP client session: its host Session and the tools
// registered on its server (always-on, tool_search, then discoveries).
type mcpSession struct {
	front *mcpFront
	hs    *host.Session
	srv   *mcp.Server

	mu         sync.Mutex
	registered map[string]bool
	closeOnce  sync.Once
	ended      func()
}

// newServer is the MCP server of one new client session.
func (f *mcpFront) newServer() (*mcp.Server, *mcpSession) {
	ms := &mcpSession{front: f, hs: f.agent.host.NewSession(), registered: map[string]bool{}, ended: func() {}}
	ms.srv = mcp.NewServer(&mcp.Implementation{Name: "toolshed", Title: "Toolshed", Version: version}, &mcp.ServerOptions{
		Instructions: host.DefaultSystemPrompt,
		Logger:       f.log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// A session counts from its initialized notification and ends
		// when its connection does (HTTP: DELETE, idle timeout, shutdown).
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			f.mu.Lock()
			f.active++
			f.mu.Unlock()
			done := f.metrics.sessionStarted("mcp")
			ms.mu.Lock()
			ms.ended = func() {
				done()
				f.mu.Lock()
				f.active--
				f.mu.Unlock()
			}
			ms.mu.Unlock()
			go func() { req.Session.Wait(); ms.close() }()
		},
		SupportedProtocolVersions: mcpVersions,
	})
	ms.srv.AddReceivingMiddleware(ms.refuseUnknown)
	ms.sync()
	return ms.srv, ms
}

func (ms *mcpSession) close() {
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
func (ms *mcpSession) sync() {
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
func (ms *mcpSession) refuseUnknown(next mcp.MethodHandler) mcp.MethodHandler {
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
		ms.front.metrics.observeCall(&host.ToolCallRecord{Name: p.Name, Plugin: ms.hs.PluginOf(p.Name), IsError: true})
		return mcpResult(res), nil
	}
}

// call runs one tool call of the session.
func (ms *mcpSession) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	ms.front.metrics.observeCall(&host.ToolCallRecord{Name: name, Plugin: ms.hs.PluginOf(name), IsError: res.IsError,
		Duration: time.Since(start), Search: rec})
	ms.front.log.Debug("mcp tool call", "session", req.Session.ID(), "tool", name, "is_error", res.IsError, "took", time.Since(start))
	return mcpResult(res), nil
}

func mcpResult(res host.Result) *mcp.CallToolResult {
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

// mcpIdle closes an HTTP MCP session its client left without saying so.
const mcpIdle = 30 * time.Minute

// httpHandler serves MCP over streamable HTTP, one server per session.
// A new session beyond server.max_concurrent live ones is refused (503).
func (f *mcpFront) httpHandler(cfg config.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			return f.stub // a request of an existing session, or none
		}
		srv, _ := f.newServer()
		return srv
	}, &mcp.StreamableHTTPOptions{Logger: f.log, SessionTimeout: mcpIdle, MaxRequestBodyBytes: cfg.MaxBodyBytes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && f.sessions() >= cfg.MaxConcurrent {
			apiError(w, http.StatusServiceUnavailable, "server_error",
				fmt.Sprintf("too many MCP sessions (server.max_concurrent = %d); close one or try later", cfg.MaxConcurrent))
			return
		}
		h.ServeHTTP(w, r)
	})
}

var mcpFlagNames = []string{"plugins", "grants", "search-mode", "workspace", "skills", "shell", "no-time", "no-todo", "log-format", "log-level"}

// cmdMCP serves MCP over stdio until the client leaves: one session, the
// catalog as it was at start. Only MCP goes to stdout; logs go to stderr.
func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	l, err := loadCommand("mcp", "usage: toolshed mcp [--config FILE] [--plugins DIR] [--search-mode MODE] [flags]\n\n"+
		"Serves MCP over stdio (for Claude Desktop, IDEs, agent frameworks).", mcpFlagNames, args, stderr)
	if err != nil {
		return err
	}
	cfg := &l.Config
	logCfg := cfg.Log
	if logCfg.Level == "info" {
		logCfg.Level = "warn" // an MCP client shows stderr to its user
	}
	log := newConfigLogger(logCfg, stderr)
	snap, err := catalog.Load(cfg.Plugins.Dir, nil)
	if err != nil {
		return err
	}
	for _, e := range snap.Errors {
		log.Warn("plugin manifest skipped", "file", e.File, "error", e.Err)
	}
	ag, err := newAgent(cfg, func() *catalog.Snapshot { return snap }, log, stderr, false)
	if err != nil {
		return err
	}
	defer ag.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, ms := newMCPFront(ag, nil, log).newServer()
	defer ms.close()
	err = srv.Run(ctx, &mcp.IOTransport{Reader: nopReadCloser{stdin}, Writer: nopWriteCloser{stdout}})
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil
	}
	return err
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
