// Package openaiapi is Toolshed's OpenAI-compatible front end: POST
// /v1/chat/completions and POST /v1/responses (OpenAI's Responses API)
// run the agent loop of a host.Host (one request, one session), plain or
// streamed as server-sent events, and GET
// /v1/models passes the upstream's model list through. Errors have
// OpenAI's shape and the headers its SDKs steer their retries by.
//
// A Server is an http.Handler an embedder mounts on its own mux;
// authentication, body limits and logging around it are the embedder's
// (toolshed serve adds API keys, request ids and metrics).
package openaiapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/metrics"
)

// Options configure a Server; nil means the defaults. They are copied
// by New.
type Options struct {
	// Upstream lists the models for /v1/models; nil: those endpoints and
	// chat completions answer 503 with NoModel's message.
	Upstream *openai.Client
	// NoModel is the message of a 503 when there is no upstream (it says
	// what to configure). Default: "no upstream model is configured".
	NoModel string
	// RequestTimeout bounds one chat completion, tool calls and model
	// rounds included. Default 10 minutes.
	RequestTimeout time.Duration
	// MaxConcurrent bounds the chat completions in progress; more wait
	// for a slot until RequestTimeout. Default 256.
	MaxConcurrent int
	// Metrics, when set, records sessions, rounds and tool calls.
	Metrics *metrics.Metrics
	// Logger logs each completion; nil: none.
	Logger *slog.Logger
	// RequestID names a request in the log (toolshed serve passes the
	// x-request-id it set); nil: none.
	RequestID func(w http.ResponseWriter) string
	// Artifacts serves GET /v1/artifacts/{id}: the files tools stored
	// (charts), under the same authentication as the rest. Nil: no such
	// endpoint.
	Artifacts *artifact.Store
	// ArtifactURL is an artifact's URL as clients reach it, in the
	// response's toolshed.artifacts; nil: /v1/artifacts/ID.
	ArtifactURL func(artifact.Artifact) string
	// InlineBytes: an artifact up to this size is also sent in
	// toolshed.artifacts as a data: URL; 0: never.
	InlineBytes int64
	// KeepResponses is how many Responses API responses are kept (in
	// memory, for previous_response_id), each for KeepFor (default 1
	// hour); 0: none, and previous_response_id is refused with a 400
	// that says so.
	KeepResponses int
	KeepFor       time.Duration
	// Tenant names whom a request runs for (toolshed serve: a hash of
	// its API key): the continuations in its client tool call ids are
	// bound to it (host.Host.Tenant), so another key's replay restores
	// nothing. Nil: every request is the same tenant.
	Tenant func(r *http.Request) string
}

// Server serves the endpoints over one host.Host. It is safe for
// concurrent use.
type Server struct {
	host *host.Host
	opts Options
	sem  chan struct{} // chat completions and responses in progress
	mux  *http.ServeMux
	kept *kept // responses kept for previous_response_id; nil: none
}

// New returns the front end of h.
func New(h *host.Host, opts *Options) *Server {
	s := &Server{host: h}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.NoModel == "" {
		s.opts.NoModel = "no upstream model is configured"
	}
	if s.opts.RequestTimeout <= 0 {
		s.opts.RequestTimeout = 10 * time.Minute
	}
	if s.opts.MaxConcurrent <= 0 {
		s.opts.MaxConcurrent = 256
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.ArtifactURL == nil {
		s.opts.ArtifactURL = func(a artifact.Artifact) string { return "/v1/artifacts/" + a.ID }
	}
	if s.opts.RequestID == nil {
		s.opts.RequestID = func(http.ResponseWriter) string { return "" }
	}
	if s.opts.Tenant == nil {
		s.opts.Tenant = func(*http.Request) string { return "" }
	}
	s.sem = make(chan struct{}, s.opts.MaxConcurrent)
	if s.opts.KeepResponses > 0 {
		if s.opts.KeepFor <= 0 {
			s.opts.KeepFor = time.Hour
		}
		s.kept = newKept(s.opts.KeepResponses, s.opts.KeepFor)
	}
	s.mux = http.NewServeMux()
	s.Register(s.mux)
	return s
}

// Register mounts the endpoints on mux: POST /v1/chat/completions, POST
// /v1/responses (responses.go), GET /v1/models and GET /v1/models/{id}.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /v1/models/{id...}", s.model)
	if s.opts.Artifacts != nil {
		mux.HandleFunc("GET /v1/artifacts/{id}", s.artifact)
	}
}

// ServeHTTP serves the endpoints Register mounts (and a 404 or 405 in
// OpenAI's shape for the rest).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		WriteError(w, http.StatusNotFound, Error{Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("unknown request URL: %s %s", r.Method, r.URL.Path)})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// WriteJSON answers with v as JSON (HTML characters not escaped).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Error is OpenAI's error object; an empty Param or Code is sent as null.
type Error struct {
	Message, Type, Param, Code string
}

// MarshalJSON writes the error as OpenAI does.
func (e Error) MarshalJSON() ([]byte, error) {
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

// WriteError answers in the OpenAI error shape.
func WriteError(w http.ResponseWriter, status int, e Error) {
	WriteJSON(w, status, map[string]Error{"error": e})
}

// apiError answers in the OpenAI error shape, without param or code.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	WriteError(w, status, Error{Type: typ, Message: msg})
}

// HTTPError answers status in the OpenAI error shape, typed by status:
// server_error from 500 on, invalid_request_error below.
func HTTPError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	apiError(w, status, typ, msg)
}

// models lists what the upstream offers.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	data, ok := s.upstreamModels(w, r)
	if !ok {
		return
	}
	WriteJSON(w, http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}{"list", data})
}

// model is one model of the upstream's list, or OpenAI's 404.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
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
			WriteJSON(w, http.StatusOK, m)
			return
		}
	}
	WriteError(w, http.StatusNotFound, Error{Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist upstream", id)})
}

func (s *Server) upstreamModels(w http.ResponseWriter, r *http.Request) ([]openai.Model, bool) {
	if s.opts.Upstream == nil {
		apiError(w, http.StatusServiceUnavailable, "server_error", s.opts.NoModel)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	list, err := s.opts.Upstream.ListModels(ctx)
	if err != nil {
		s.opts.Logger.Warn("upstream model list failed", "request_id", s.opts.RequestID(w), "error", err)
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
		Discovered []string       `json:"discovered"`
		Rounds     int            `json:"rounds"`
		ToolCalls  []string       `json:"tool_calls"`
		Artifacts  []artifactJSON `json:"artifacts,omitempty"`
	}
	// artifactJSON is a file a tool stored: its URL under this server
	// (same API keys), and the bytes as a data: URL when small.
	artifactJSON struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		ContentType string `json:"content_type"`
		Size        int64  `json:"size"`
		URL         string `json:"url"`
		Data        string `json:"data,omitempty"`
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

func (s *Server) trace(resp *host.Response) *toolshedTrace {
	t := &toolshedTrace{Discovered: nonNil(resp.Discovered), Rounds: len(resp.Rounds), ToolCalls: []string{}}
	for _, r := range resp.Rounds {
		for _, c := range r.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, c.Name)
			for _, a := range c.Artifacts {
				t.Artifacts = append(t.Artifacts, s.artifactJSON(a))
			}
		}
	}
	return t
}

func (s *Server) artifactJSON(a artifact.Artifact) artifactJSON {
	j := artifactJSON{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, URL: s.opts.ArtifactURL(a)}
	if a.Size <= s.opts.InlineBytes {
		if data, err := os.ReadFile(a.Path); err == nil {
			j.Data = "data:" + a.ContentType + ";base64," + base64.StdEncoding.EncodeToString(data)
		}
	}
	return j
}

// artifact serves one artifact: its bytes with their content type, never
// run as a page of this origin (an SVG can hold script): nosniff, and a
// sandboxing Content-Security-Policy; what is not an image is a download.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Artifacts.Get(r.PathValue("id"))
	if err != nil {
		WriteError(w, http.StatusNotFound, Error{Type: "invalid_request_error", Code: "artifact_not_found",
			Message: "no such artifact: it never existed or is past its retention (artifacts.max_age, artifacts.max_mb)"})
		return
	}
	f, err := os.Open(a.Path)
	if err != nil {
		WriteError(w, http.StatusNotFound, Error{Type: "invalid_request_error", Code: "artifact_not_found", Message: "no such artifact"})
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox")
	h.Set("Cache-Control", "private, max-age=3600")
	disposition := "attachment"
	if strings.HasPrefix(a.ContentType, "image/") {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}))
	http.ServeContent(w, r, "", a.Created, f)
}

// chatCompletions runs the agent loop for one OpenAI chat completion
// request: one request, one session.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if !s.readRequest(w, r, &req, bodyError) {
		return
	}
	ctx, release, ok := s.admit(w, r, "chat completion")
	if !ok {
		return
	}
	defer release()
	var err error
	done := s.opts.Metrics.SessionStarted("chat")
	defer done()
	id, start := newID(), time.Now()
	h := s.host.Tenant(s.opts.Tenant(r))
	var resp *host.Response
	if req.Stream {
		resp, err = s.streamCompletion(ctx, w, h, id, req)
	} else {
		resp, err = h.RunRequest(ctx, req, nil)
		if errors.Is(err, host.ErrMaxRounds) {
			s.opts.Logger.Warn("chat completion stopped at the round limit (agent.max_rounds)", "request_id", s.opts.RequestID(w), "id", id)
			err = nil // what was said stands, with finish_reason "length"
		}
		if err == nil {
			msg := &chatMessage{Role: "assistant", Content: ptr(resp.Answer), ToolCalls: clientToolCalls(resp.ClientCalls, false)}
			if len(resp.ClientCalls) > 0 && resp.Answer == "" {
				msg.Content = nil
			}
			WriteJSON(w, http.StatusOK, chatResponse{ID: id, Object: "chat.completion", Created: start.Unix(), Model: resp.Model,
				Choices: []chatChoice{{Message: msg, FinishReason: ptr(string(resp.FinishReason))}},
				Usage:   &resp.Usage, Toolshed: s.trace(resp)})
		} else {
			completionFailure(err).write(w)
		}
	}
	s.opts.Metrics.ObserveResponse(resp)
	attrs := []any{"request_id", s.opts.RequestID(w), "id", id, "stream", req.Stream, "took", time.Since(start).Round(time.Millisecond)}
	if resp != nil {
		attrs = append(attrs, "model", resp.Model, "rounds", len(resp.Rounds), "discovered", resp.Discovered, "finish", resp.FinishReason)
	}
	if err != nil {
		s.opts.Logger.Warn("chat completion failed", append(attrs, "error", err)...)
	} else {
		s.opts.Logger.Info("chat completion", attrs...)
	}
}

// readRequest reads a request body into v; on failure it answers (413, or
// 400 with decodeErr's words) and returns false.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, v any, decodeErr func(error) Error) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
				fmt.Sprintf("the request body is larger than %d bytes (server.max_body_bytes)", tooBig.Limit))
			return false
		}
		s.opts.Logger.Info("reading a request body failed", "request_id", s.opts.RequestID(w), "error", err)
		HTTPError(w, http.StatusBadRequest, "the request body could not be read")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		WriteError(w, http.StatusBadRequest, decodeErr(err))
		return false
	}
	return true
}

// admit gives a request its slot (one of MaxConcurrent) and its deadline
// (RequestTimeout); on failure it answers (503) and returns false. release
// frees the slot.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, what string) (ctx context.Context, release func(), ok bool) {
	if s.opts.Upstream == nil {
		apiError(w, http.StatusServiceUnavailable, "server_error", s.opts.NoModel)
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
	select {
	case s.sem <- struct{}{}:
		return ctx, func() { <-s.sem; cancel() }, true
	case <-ctx.Done():
		cancel()
		if r.Context().Err() != nil {
			s.opts.Logger.Info(what + " abandoned by the client while waiting for a slot")
			return nil, nil, false
		}
		apiError(w, http.StatusServiceUnavailable, "server_error", "the server is busy: no slot freed up within server.request_timeout")
		return nil, nil, false
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
func (s *Server) streamCompletion(ctx context.Context, w http.ResponseWriter, h *host.Host, id string, req openai.ChatCompletionRequest) (*host.Response, error) {
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	started, roleSent := false, false
	model := req.Model
	if model == "" {
		model = s.host.Model()
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
	resp, err := h.RunRequest(ctx, req, func(e host.Event) {
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
		s.opts.Logger.Warn("chat completion stopped at the round limit (agent.max_rounds)", "request_id", s.opts.RequestID(w), "id", id)
		err = nil // what was said stands, with finish_reason "length"
	}
	if err != nil {
		f := completionFailure(err)
		if !started {
			f.write(w)
			return resp, err
		}
		b, _ := json.Marshal(map[string]Error{"error": f.err})
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
		return resp, err
	}
	if len(resp.ClientCalls) > 0 {
		delta(chatMessage{ToolCalls: clientToolCalls(resp.ClientCalls, true)}, nil)
	}
	send(chatResponse{Choices: []chatChoice{{Delta: &chatMessage{}, FinishReason: ptr(string(resp.FinishReason))}}, Toolshed: s.trace(resp)})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(chatResponse{Usage: &resp.Usage})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	rc.Flush()
	return resp, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
