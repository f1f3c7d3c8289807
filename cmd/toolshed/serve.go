package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
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
	metrics *metrics
	mcp     http.Handler
	log     *slog.Logger
	sem     chan struct{} // agent requests in progress
	// stopping is closed when shutdown begins: long-lived MCP streams end,
	// requests in progress drain.
	stopping chan struct{}
}

type pluginStatus struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Manifest string   `json:"manifest"`
	Tools    []string `json:"tools"`
	State    string   `json:"state"` // ready, failed, not compiled
	Error    string   `json:"error,omitempty"`
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
	mux.HandleFunc("GET /v1/plugins", s.plugins)
	mux.HandleFunc("GET /v1/search", s.search)
	if s.agent != nil {
		mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
		mux.HandleFunc("GET /v1/models", s.models)
		mux.HandleFunc("GET /v1/models/{id...}", s.model)
	}
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.handler())
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
			writeError(w, http.StatusMethodNotAllowed, apiErr{Type: "invalid_request_error", Code: "method_not_allowed",
				Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, miss.header.Get("Allow"))})
			return
		}
		writeError(w, http.StatusNotFound, apiErr{Type: "invalid_request_error", Code: "unknown_url",
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
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
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
			s.metrics.observeHTTP(endpoint, sw.code(), time.Since(start))
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
			writeError(w, http.StatusUnauthorized, apiErr{Type: "invalid_request_error", Code: "invalid_api_key",
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// apiErr is OpenAI's error object; an empty Param or Code is sent as null.
type apiErr struct {
	Message, Type, Param, Code string
}

func (e apiErr) MarshalJSON() ([]byte, error) {
	null := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{e.Message, e.Type, null(e.Param), null(e.Code)})
}

// writeError answers in the OpenAI error shape.
func writeError(w http.ResponseWriter, status int, e apiErr) {
	writeJSON(w, status, map[string]apiErr{"error": e})
}

// apiError answers in the OpenAI error shape, without param or code.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeError(w, status, apiErr{Type: typ, Message: msg})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	apiError(w, status, typ, msg)
}

func (s *server) plugins(w http.ResponseWriter, r *http.Request) {
	snap := s.live.Snapshot()
	out := struct {
		Generation uint64         `json:"generation"`
		Dir        string         `json:"dir"`
		Plugins    []pluginStatus `json:"plugins"`
		Errors     []errorJSON    `json:"errors"`
	}{snap.Generation, snap.Dir, []pluginStatus{}, []errorJSON{}}
	for _, p := range snap.Plugins {
		st := pluginStatus{Name: p.Name(), Version: p.Manifest.Version, Manifest: p.ManifestPath, Tools: []string{}}
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
	writeJSON(w, http.StatusOK, out)
}

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		httpError(w, http.StatusBadRequest, "the query parameter q is required: /v1/search?q=...")
		return
	}
	limit := search.DefaultLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			httpError(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	snap := s.live.Snapshot()
	res, err := snap.Search(q, limit)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Results []searchResult `json:"results"`
		Unknown []string       `json:"unknown,omitempty"`
	}{searchResults(snap, res), res.Unknown})
}

// models lists what the upstream offers.
func (s *server) models(w http.ResponseWriter, r *http.Request) {
	data, ok := s.upstreamModels(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}{"list", data})
}

// model is one model of the upstream's list, or OpenAI's 404.
func (s *server) model(w http.ResponseWriter, r *http.Request) {
	data, ok := s.upstreamModels(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	for _, m := range data {
		if m.ID == id {
			if m.Object == "" {
				m.Object = "model"
			}
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, http.StatusNotFound, apiErr{Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist upstream", id)})
}

func (s *server) upstreamModels(w http.ResponseWriter, r *http.Request) ([]openai.Model, bool) {
	if s.agent.client == nil {
		apiError(w, http.StatusServiceUnavailable, "server_error", errNoModel.Error())
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	list, err := s.agent.client.ListModels(ctx)
	if err != nil {
		s.log.Warn("upstream model list failed", "request_id", requestID(w), "error", err)
		upstreamFailure(err).write(w)
		return nil, false
	}
	if list.Models == nil {
		return []openai.Model{}, true
	}
	return list.Models, true
}

// The chat completion shapes, as OpenAI sends them.
type (
	chatResponse struct {
		ID       string         `json:"id"`
		Object   string         `json:"object"`
		Created  int64          `json:"created"`
		Model    string         `json:"model"`
		Choices  []chatChoice   `json:"choices"`
		Usage    *openai.Usage  `json:"usage,omitempty"`
		Toolshed *toolshedTrace `json:"toolshed,omitempty"`
	}
	chatChoice struct {
		Index        int          `json:"index"`
		Message      *chatMessage `json:"message,omitempty"`
		Delta        *chatMessage `json:"delta,omitempty"`
		FinishReason *string      `json:"finish_reason"`
	}
	chatMessage struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
	}
	chatToolCall struct {
		Index    *int                `json:"index,omitempty"`
		ID       string              `json:"id"`
		Type     string              `json:"type"`
		Function openai.FunctionCall `json:"function"`
	}
	// toolshedTrace tells what the server did for the answer.
	toolshedTrace struct {
		Discovered []string `json:"discovered"`
		Rounds     int      `json:"rounds"`
		ToolCalls  []string `json:"tool_calls"`
	}
)

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "chatcmpl-" + hex.EncodeToString(b)
}

func ptr[T any](v T) *T { return &v }

func clientToolCalls(calls []openai.ToolCall, indexed bool) []chatToolCall {
	var out []chatToolCall
	for i, c := range calls {
		tc := chatToolCall{ID: c.ID, Type: "function", Function: c.Function}
		if indexed {
			tc.Index = ptr(i)
		}
		out = append(out, tc)
	}
	return out
}

func trace(resp *host.Response) *toolshedTrace {
	t := &toolshedTrace{Discovered: nonNil(resp.Discovered), Rounds: len(resp.Rounds), ToolCalls: []string{}}
	for _, r := range resp.Rounds {
		for _, c := range r.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, c.Name)
		}
	}
	return t
}

// chatCompletions runs the agent loop for one OpenAI chat completion
// request: one request, one session.
func (s *server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
				fmt.Sprintf("the request body is larger than %d bytes (server.max_body_bytes)", tooBig.Limit))
			return
		}
		s.log.Info("reading a request body failed", "request_id", requestID(w), "error", err)
		httpError(w, http.StatusBadRequest, "the request body could not be read")
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, bodyError(err))
		return
	}
	if s.agent.client == nil {
		apiError(w, http.StatusServiceUnavailable, "server_error", errNoModel.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		if r.Context().Err() != nil {
			s.log.Info("chat completion abandoned by the client while waiting for a slot")
			return
		}
		apiError(w, http.StatusServiceUnavailable, "server_error", "the server is busy: no slot freed up within server.request_timeout")
		return
	}
	done := s.metrics.sessionStarted("chat")
	defer done()
	id, start := newID(), time.Now()
	var resp *host.Response
	if req.Stream {
		resp, err = s.streamCompletion(ctx, w, id, req)
	} else {
		resp, err = s.agent.host.RunRequest(ctx, req, nil)
		if errors.Is(err, host.ErrMaxRounds) {
			s.log.Warn("chat completion stopped at the round limit (agent.max_rounds)", "request_id", requestID(w), "id", id)
			err = nil // what was said stands, with finish_reason "length"
		}
		if err == nil {
			msg := &chatMessage{Role: "assistant", Content: ptr(resp.Answer), ToolCalls: clientToolCalls(resp.ClientCalls, false)}
			if len(resp.ClientCalls) > 0 && resp.Answer == "" {
				msg.Content = nil
			}
			writeJSON(w, http.StatusOK, chatResponse{ID: id, Object: "chat.completion", Created: start.Unix(), Model: resp.Model,
				Choices: []chatChoice{{Message: msg, FinishReason: ptr(string(resp.FinishReason))}},
				Usage:   &resp.Usage, Toolshed: trace(resp)})
		} else {
			completionFailure(err).write(w)
		}
	}
	s.metrics.observeResponse(resp)
	attrs := []any{"request_id", requestID(w), "id", id, "stream", req.Stream, "took", time.Since(start).Round(time.Millisecond)}
	if resp != nil {
		attrs = append(attrs, "model", resp.Model, "rounds", len(resp.Rounds), "discovered", resp.Discovered, "finish", resp.FinishReason)
	}
	if err != nil {
		s.log.Warn("chat completion failed", append(attrs, "error", err)...)
	} else {
		s.log.Info("chat completion", attrs...)
	}
}

// streamWriteTimeout bounds one write of a stream: a client that stops
// reading does not hold its slot for ever.
const streamWriteTimeout = 60 * time.Second

// streamCompletion answers with server-sent events in the chat completion
// chunk format: the answer's text as the model streams it (every round's,
// rounds apart by a blank line: the same text a plain response carries),
// SSE comments while tools run (clients ignore them; they keep proxies
// from timing out), the client tool calls, the finish reason, the usage
// when stream_options.include_usage asks, then [DONE]. An error before
// anything was sent is an ordinary error response; after, an error event.
func (s *server) streamCompletion(ctx context.Context, w http.ResponseWriter, id string, req openai.ChatCompletionRequest) (*host.Response, error) {
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	started, roleSent := false, false
	model := req.Model
	if model == "" {
		model = s.agent.host.Model()
	}
	begin := func() {
		if started {
			return
		}
		started = true
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
	}
	send := func(c chatResponse) {
		begin()
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", created, model
		if c.Choices == nil {
			c.Choices = []chatChoice{}
		}
		b, _ := json.Marshal(c)
		rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
	}
	delta := func(m chatMessage, finish *string) {
		if !roleSent { // the first chunk names the role, as OpenAI's do
			roleSent = true
			if m.Role == "" {
				send(chatResponse{Choices: []chatChoice{{Delta: &chatMessage{Role: "assistant", Content: ptr("")}}}})
			}
		}
		send(chatResponse{Choices: []chatChoice{{Delta: &m, FinishReason: finish}}})
	}
	resp, err := s.agent.host.RunRequest(ctx, req, func(e host.Event) {
		switch e.Kind {
		case host.EventText:
			delta(chatMessage{Content: ptr(e.Text)}, nil)
		case host.EventToolCall, host.EventToolResult:
			begin()
			rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			// The name is the model's: quoted, so it cannot end the comment.
			fmt.Fprintf(w, ": %s %s\n\n", e.Kind, strconv.QuoteToASCII(e.Call.Name))
			rc.Flush()
		}
	})
	if errors.Is(err, host.ErrMaxRounds) {
		s.log.Warn("chat completion stopped at the round limit (agent.max_rounds)", "request_id", requestID(w), "id", id)
		err = nil // what was said stands, with finish_reason "length"
	}
	if err != nil {
		f := completionFailure(err)
		if !started {
			f.write(w)
			return resp, err
		}
		b, _ := json.Marshal(map[string]apiErr{"error": f.err})
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
		return resp, err
	}
	if len(resp.ClientCalls) > 0 {
		delta(chatMessage{ToolCalls: clientToolCalls(resp.ClientCalls, true)}, nil)
	}
	send(chatResponse{Choices: []chatChoice{{Delta: &chatMessage{}, FinishReason: ptr(string(resp.FinishReason))}}, Toolshed: trace(resp)})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(chatResponse{Usage: &resp.Usage})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	rc.Flush()
	return resp, nil
}

// newServer makes the server of a configuration: live catalog, plugin
// runtime, agent, metrics and MCP front. close releases them.
func newServer(cfg *config.Config, log *slog.Logger, stderr io.Writer) (*server, error) {
	var rt *wasm.Host
	var mu sync.Mutex
	live, err := catalog.NewLive(cfg.Plugins.Dir, catalog.LiveOptions{Logger: log, OnChange: func(_, snap *catalog.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		if rt != nil {
			rt.Sync(snap)
		}
	}})
	if err != nil {
		return nil, err
	}
	ag, err := newAgent(cfg, live.Snapshot, log, stderr, false)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	rt = ag.runtime
	mu.Unlock()
	s := &server{cfg: cfg.Server, live: live, runtime: rt, agent: ag, log: log,
		sem: make(chan struct{}, cfg.Server.MaxConcurrent), stopping: make(chan struct{})}
	s.metrics = newMetrics(rt, live)
	s.metrics.known = ag.host.HasTool
	s.mcp = newMCPFront(ag, s.metrics, log).httpHandler(cfg.Server)
	return s, nil
}

func (s *server) close() { s.agent.close() }

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
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
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
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	upstream := "none (agent endpoint off: set model.base_url)"
	if ag.client != nil {
		upstream = cfg.Model.BaseURL + " (" + cfg.Model.Name + ")"
	}
	fmt.Fprintf(stdout, "toolshed serving %d tools from %s on http://%s\n  upstream model: %s\n  endpoints: POST /v1/chat/completions, GET /v1/models, /mcp, GET /v1/plugins, /v1/search?q=, /metrics, /healthz\n",
		len(live.Snapshot().Tools), cfg.Plugins.Dir, ln.Addr(), upstream)
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
