// Package host is the agent host: it talks to an OpenAI-compatible model,
// rebuilds the function list every round from the request's Session, and
// discloses deferred tools (plugins) only after the model finds them with
// tool_search.
//
// Every Run is one request and one Session: its own catalog snapshot, its
// own discovered set, its own plugin instances. Found tools join the
// function list from the next round on and stay until the request ends;
// nothing leaks into another request. RunRequest is Run for a whole OpenAI
// request (client tools, model and sampling fields); NewSession gives a
// front end that drives calls itself (an MCP server) a Session for as long
// as its client stays.
//
// A Host is safe for concurrent use; any number of Runs may proceed at once.
package host

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/upstream"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/tokens"
)

// GoTool is an always-on tool implemented in Go, sent to the model every
// round.
type GoTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema, top-level type object; nil: no parameters
	// Call runs the tool. Its Result (IsError included) goes to the model;
	// a Go error is reported to the model as a tool failure.
	Call func(ctx context.Context, args json.RawMessage) (Result, error)
	// SessionCall, when set instead of Call, also gets the request's
	// Session (for tools with per-request state).
	SessionCall func(ctx context.Context, s *Session, args json.RawMessage) (Result, error)
	// Title and Annotations are shown to MCP clients (ToolInfo), never to
	// the model.
	Title       string
	Annotations *manifest.Annotations
}

// Result is a tool's answer to the model (Content, IsError) and, from
// plugins, the structured data it returned (not sent to the model).
type Result struct {
	Content    string
	IsError    bool
	Structured json.RawMessage
	// Artifacts are the files the call stored (a chart), in order. The
	// model reads of them what ArtifactLink gives; front ends send them
	// to their clients.
	Artifacts []artifact.Artifact
}

// Options configure a Host. Client and Model are required; the rest have
// defaults.
type Options struct {
	// Client talks to the model; Model names it.
	Client *openai.Client
	Model  string
	// Tools are the always-on tools, sent in this order every round.
	Tools []GoTool
	// PluginDir, when Catalog is nil, is loaded once as the catalog of
	// deferred tools, with the names of Tools reserved (a plugin tool
	// named like one of them, or a look-alike, is refused). A plugin is
	// admitted as toolshed serve admits it: its module there, matching the
	// manifest's sha256 and passing wasm.CheckModule. When Runtime is nil,
	// a runtime with default options (nothing granted) is made for it,
	// closed by Host.Close.
	PluginDir string
	// Catalog returns the current snapshot of deferred tools; each request
	// keeps the one it started with. Nil (and no PluginDir): none. A
	// catalog made by the embedder should reserve the names of Tools
	// (catalog.Options.Reserved), as PluginDir does.
	Catalog func() *catalog.Snapshot
	// Runtime runs plugins; nil (and no PluginDir): deferred tools cannot
	// be called.
	Runtime *wasm.Host
	// Search configures tool_search.
	Search SearchOptions
	// MaxRounds bounds the model rounds of one request (default 16).
	MaxRounds int
	// Upstream, when set, is the model endpoint the host calls over HTTP
	// itself (Client is then not used for chat completions): it sees the
	// upstream's status codes and Retry-After, and sends the selection
	// call's temperature 0, which Client drops.
	Upstream *Upstream
	// Retries is how many times a model call is retried after a 408, 409,
	// 429, a 5xx or a network failure (default 3; negative: none), waiting
	// RetryBackoff (default 500ms), doubled each time up to 8s, or the
	// upstream's Retry-After when longer. A Retry-After over MaxRetryWait
	// (default 8s), or one that would pass the request's deadline, is not
	// waited out here: the call fails at once with it (ModelError), for
	// the caller's client to wait. A call that times out is not retried.
	Retries      int
	RetryBackoff time.Duration
	MaxRetryWait time.Duration
	// RequestTimeout bounds one model call (default 2 minutes); the whole
	// request is bounded by its context's deadline, retries included.
	RequestTimeout time.Duration
	// ContinuationKey seals the state a request hands its client in the
	// ids of client tool calls (RunRequest; continuation.go): encrypted and
	// authenticated, bound to the request's tenant (Host.Tenant) and the
	// call. Servers sharing it accept each other's continuations; nil: a
	// random key per Host, so continuations do not survive a restart.
	ContinuationKey []byte
	// SystemPrompt is prepended as a system message; empty uses
	// DefaultSystemPrompt, "-" sends none.
	SystemPrompt string
	// AutoDiscover makes a call to an undiscovered deferred tool discover
	// it instead of failing (off by default: the model must search).
	AutoDiscover bool
	// ArtifactLink is how the model may point the user to an artifact a
	// tool stored (a URL toolshed serve answers); a line "artifact NAME:
	// LINK" per artifact is added to the tool's result the model reads.
	// Nil: "artifact NAME (CONTENT TYPE, N bytes)", no link.
	ArtifactLink func(artifact.Artifact) string
	// Logger receives per-round records; nil discards.
	Logger *slog.Logger
}

// DefaultSystemPrompt is the guidance on tool_search.
const DefaultSystemPrompt = "You have a small set of tools. More specialised tools exist but are hidden: " +
	"call tool_search only when the tools you have cannot do the job, with a short description of the capability you need. " +
	"Tools it finds become callable from your next step on."

// Host runs requests. The Host New returns is shared by every request;
// each Session holds a view of it (the same core) whose model calls add
// their usage to that session's meter, so the tokens of tool_search's
// selection calls count in the request's usage too.
type Host struct {
	*core
	meter  *usageMeter // nil on the shared Host
	tenant string      // whose continuations (see Tenant)
}

// core is what every view of a Host shares; nothing in it changes after
// New but the caches, which have their own locks.
type core struct {
	opts    Options
	goTools []GoTool
	byName  map[string]*GoTool
	schemas map[string]compiledSchema // always-on tools' schemas, compiled once
	aead    cipher.AEAD               // seals continuation ids (continuation.go)
	model   *upstream.Client          // the model the rounds run on
	chooser *upstream.Client          // the model tool_search's selection asks

	emptyOnce sync.Once
	empty     *catalog.Snapshot // the catalog when none is configured
	runtime   *wasm.Host
	log       *slog.Logger

	ownRuntime bool // made by New, closed by Close

	tokMu   sync.Mutex
	tokSnap *catalog.Snapshot
	tokAll  int

	semantic *semantic // tool_search's semantic stage (nil: none)
}

// usageMeter adds up the token usage of one request's model calls. Safe
// for concurrent use (a round's searches run at once).
type usageMeter struct {
	mu    sync.Mutex
	usage openai.Usage
}

func (m *usageMeter) add(u openai.Usage) {
	if m == nil {
		return
	}
	m.mu.Lock()
	addUsage(&m.usage, u)
	m.mu.Unlock()
}

func (m *usageMeter) total() openai.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// Close releases what New made (the plugin runtime for PluginDir).
func (h *Host) Close(ctx context.Context) error {
	if h.ownRuntime {
		return h.runtime.Close(ctx)
	}
	return nil
}

// New checks the options and returns a Host. It panics on programmer
// errors in Tools (duplicate or reserved names), as registration does.
func New(opts Options) (*Host, error) {
	if (opts.Client == nil && opts.Upstream == nil) || opts.Model == "" {
		return nil, errors.New("host: a model client (or upstream) and model name are required")
	}
	h := &Host{core: &core{opts: opts, byName: map[string]*GoTool{}, schemas: map[string]compiledSchema{},
		goTools: make([]GoTool, 0, len(opts.Tools)), runtime: opts.Runtime, log: opts.Logger}}
	sealKey := opts.ContinuationKey
	if len(sealKey) == 0 {
		sealKey = make([]byte, 32)
		rand.Read(sealKey)
	}
	h.aead = newSealer(sealKey)
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opts.MaxRounds <= 0 {
		h.opts.MaxRounds = 16
	}
	if h.opts.Retries == 0 {
		h.opts.Retries = 3
	}
	if h.opts.RetryBackoff <= 0 {
		h.opts.RetryBackoff = 500 * time.Millisecond
	}
	if h.opts.RequestTimeout <= 0 {
		h.opts.RequestTimeout = 2 * time.Minute
	}
	if h.opts.MaxRetryWait <= 0 {
		h.opts.MaxRetryWait = 8 * time.Second
	}
	h.opts.Search = h.opts.Search.withDefaults()
	if e := h.opts.Search.Embedder; e != nil {
		h.semantic = newSemantic(e, h.opts.Search.EmbedTimeout, h.log)
	}
	h.model = &upstream.Client{Endpoint: opts.Upstream, OpenAI: opts.Client, Retries: h.opts.Retries, Backoff: h.opts.RetryBackoff,
		MaxRetryWait: h.opts.MaxRetryWait, RequestTimeout: h.opts.RequestTimeout, Logger: h.log}
	h.chooser = h.model
	if c := h.opts.Search.LLMClient; c != nil && c != opts.Client {
		chooser := *h.model
		chooser.Endpoint, chooser.OpenAI = nil, c
		h.chooser = &chooser
	}
	if opts.PluginDir != "" && opts.Catalog == nil {
		reserved := make([]string, len(opts.Tools))
		for i, t := range opts.Tools {
			reserved[i] = t.Name
		}
		snap, err := catalog.Load(opts.PluginDir, &catalog.Options{Reserved: reserved,
			RequireModules: true, CheckModule: wasm.CheckModule}) // as toolshed serve admits plugins
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		for _, e := range snap.Errors {
			h.log.Warn("plugin manifest skipped", "file", e.File, "error", e.Err)
		}
		h.opts.Catalog = func() *catalog.Snapshot { return snap }
	}
	if opts.PluginDir != "" && opts.Runtime == nil {
		rt, err := wasm.New(&wasm.Options{Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		h.runtime, h.ownRuntime = rt, true
	}
	for _, t := range opts.Tools {
		if t.Name == ToolSearchName {
			panic(fmt.Sprintf("host: tool name %q is reserved", t.Name))
		}
		if _, dup := h.byName[t.Name]; dup {
			panic(fmt.Sprintf("host: tool %q registered twice", t.Name))
		}
		if (t.Call == nil) == (t.SessionCall == nil) {
			panic(fmt.Sprintf("host: tool %q needs exactly one of Call and SessionCall", t.Name))
		}
		h.goTools = append(h.goTools, t) // capacity is set: the pointers below stay valid
		h.byName[t.Name] = &h.goTools[len(h.goTools)-1]
		sch, err := manifest.CompileSchema(t.Parameters)
		h.schemas[t.Name] = compiledSchema{sch, err}
	}
	return h, nil
}

// Model is the model requests run on when they name none.
func (h *Host) Model() string { return h.opts.Model }

// HasTool reports whether name is tool_search, an always-on tool or a
// deferred tool of the current catalog.
func (h *Host) HasTool(name string) bool {
	if h.ownTool(name) {
		return true
	}
	_, ok := h.snapshot().Tool(name)
	return ok
}

// ownTool reports whether name is tool_search or an always-on tool.
func (h *Host) ownTool(name string) bool {
	_, ok := h.byName[name]
	return ok || name == ToolSearchName
}

func (h *Host) snapshot() *catalog.Snapshot {
	if h.opts.Catalog != nil {
		if s := h.opts.Catalog(); s != nil {
			return s
		}
	}
	h.emptyOnce.Do(func() { h.empty, _ = catalog.LoadFS(emptyFS{}, "", nil) })
	return h.empty
}

// Response is the outcome of one request.
type Response struct {
	// Answer is the text of every round, in order, rounds apart by a
	// blank line: what a stream sent.
	Answer     string
	Messages   []openai.ChatCompletionMessage // the whole conversation, the answer last
	Discovered []string
	Rounds     []Round
	// Model is the model the request ran on.
	Model string
	// ClientCalls are the calls of the last round to the request's client
	// tools (RunRequest): the request ends there and the caller runs them.
	// The first call's ID is sealed: it carries, encrypted, the tools the
	// request discovered and its server-side messages, which the next
	// RunRequest of the same tenant restores from it (stateless: the
	// client sends the ID back with the conversation).
	ClientCalls []openai.ToolCall
	// FinishReason is why the last round ended: "stop", "length",
	// "tool_calls" (ClientCalls), as the model reported it; "length" too
	// when MaxRounds ended the request (ErrMaxRounds).
	FinishReason openai.FinishReason
	// Usage adds up the model's token usage over all rounds (zero where the
	// model reported none).
	Usage openai.Usage
}

// Round records one model round.
type Round struct {
	Tools     []string         // the function names sent
	ToolCalls []ToolCallRecord // what the model called, in order
	// ToolTokens is what the definitions sent cost (o200k_base tokens of
	// their JSON); AllToolsTokens what sending every tool (always-on and
	// all deferred, without tool_search) would have cost. 0 when counting
	// failed.
	ToolTokens     int
	AllToolsTokens int
}

// ToolCallRecord is one tool call and its outcome.
type ToolCallRecord struct {
	Name string `json:"name"`
	// Plugin is the plugin of a deferred tool; "" for always-on tools and
	// tool_search.
	Plugin    string        `json:"plugin,omitempty"`
	Arguments string        `json:"arguments"`
	IsError   bool          `json:"is_error"`
	Duration  time.Duration `json:"duration_ns"`
	Search    *SearchRecord `json:"search,omitempty"`
	// Structured is the plugin's structured result, if any.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Artifacts are the files the call stored.
	Artifacts []artifact.Artifact `json:"artifacts,omitempty"`
}

// ErrMaxRounds is returned when the model keeps calling tools past
// MaxRounds, with the Response so far: its Answer is what the model said,
// its FinishReason "length".
var ErrMaxRounds = errors.New("host: the model was still calling tools after the round limit")

// Run runs one request to its answer: rounds of model calls and tool calls
// until the model answers without tool calls or MaxRounds is reached (then
// the Response so far and ErrMaxRounds).
func (h *Host) Run(ctx context.Context, messages []openai.ChatCompletionMessage) (*Response, error) {
	return h.run(ctx, openai.ChatCompletionRequest{Messages: messages}, nil)
}

// Event is what RunStream reports as a request proceeds.
type Event struct {
	Kind EventKind
	// Text is a piece of the answer (EventText).
	Text string
	// Call is a tool call (EventToolCall, and with its outcome EventToolResult).
	Call *ToolCallRecord
	// Result is the tool's answer (EventToolResult).
	Result string
	// Round counts from 1.
	Round int
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds, in the order they occur within a round.
const (
	EventRound      EventKind = "round"       // a round starts
	EventText       EventKind = "text"        // a piece of the model's text
	EventToolCall   EventKind = "tool_call"   // the model called a tool
	EventToolResult EventKind = "tool_result" // the call finished
)

// RunStream is Run with the model's answer streamed: onEvent is called, in
// order and from one goroutine at a time, with rounds, text pieces and
// tool calls as they happen. It returns what Run returns.
func (h *Host) RunStream(ctx context.Context, messages []openai.ChatCompletionMessage, onEvent func(Event)) (*Response, error) {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	return h.run(ctx, openai.ChatCompletionRequest{Messages: messages}, onEvent)
}

// ErrInvalidRequest marks a RunRequest the host cannot run as given (the
// caller's mistake, an HTTP 400); the error is a *RequestError.
var ErrInvalidRequest = errors.New("invalid request")

// RequestError is a request the host cannot run as given: Param names the
// field at fault ("messages", "tools[2]"), Message says what to fix.
type RequestError struct {
	Param, Message string
}

func (e *RequestError) Error() string { return "invalid request: " + e.Message }

// Is makes a RequestError match ErrInvalidRequest.
func (e *RequestError) Is(target error) bool { return target == ErrInvalidRequest }

// RunRequest runs one request given as an OpenAI chat completion request,
// the way an OpenAI-compatible server receives it. Messages is the
// conversation; Model, when set, replaces Options.Model; the sampling
// fields (temperature, max tokens, stop, response format, …) go with every
// round. Tools are the client's own tools: sent every round after the
// always-on tools, never run here — a round that calls one ends the
// request with Response.ClientCalls (and FinishReason "tool_calls");
// server-side calls of that same round are not run. ToolChoice may be
// empty, "auto" or "none". Stream is ignored: a non-nil onEvent streams,
// as RunStream does. Errors wrapping ErrInvalidRequest say what to fix.
func (h *Host) RunRequest(ctx context.Context, req openai.ChatCompletionRequest, onEvent func(Event)) (*Response, error) {
	if err := h.checkRequest(req); err != nil {
		return nil, err
	}
	return h.run(ctx, req, onEvent)
}

func (h *Host) checkRequest(req openai.ChatCompletionRequest) error {
	bad := func(param, format string, args ...any) error {
		return &RequestError{Param: param, Message: fmt.Sprintf(format, args...)}
	}
	if len(req.Messages) == 0 {
		return bad("messages", "messages is empty")
	}
	if req.N > 1 {
		return bad("n", "n must be 1: the agent loop makes one answer")
	}
	if len(req.Functions) > 0 || req.FunctionCall != nil {
		return bad("functions", "functions and function_call are not supported: use tools")
	}
	switch c := req.ToolChoice.(type) {
	case nil:
	case string:
		if c != "" && c != "auto" && c != "none" {
			return bad("tool_choice", "tool_choice %q is not supported: use \"auto\" or \"none\"", c)
		}
	default:
		return bad("tool_choice", "tool_choice naming a tool is not supported: use \"auto\" or \"none\"")
	}
	snap := h.snapshot()
	seen := map[string]bool{}
	for i, t := range req.Tools {
		if t.Type != openai.ToolTypeFunction || t.Function == nil || t.Function.Name == "" {
			return bad(fmt.Sprintf("tools[%d]", i), "tools[%d] must be a function with a name", i)
		}
		name := t.Function.Name
		_, deferred := snap.Tool(name)
		switch {
		case seen[name]:
			return bad(fmt.Sprintf("tools[%d]", i), "tools[%d]: %q is given twice", i, name)
		case deferred || h.ownTool(name):
			return bad(fmt.Sprintf("tools[%d]", i), "tools[%d]: %q is also the name of a server tool; rename the client tool", i, name)
		}
		seen[name] = true
	}
	return nil
}

func (h *Host) run(ctx context.Context, base openai.ChatCompletionRequest, onEvent func(Event)) (*Response, error) {
	s := h.newSession()
	defer s.Close()
	s.client = base.Tools
	model := base.Model
	if model == "" {
		model = h.opts.Model
	}
	in, restored := h.unseal(base.Messages)
	s.discover(restored)
	msgs := h.withSystem(in)
	fresh := len(msgs) // the messages this request adds start here
	resp := &Response{Model: model}
	// said is the text of every round, in order: the answer is all of it
	// (streamed or not), rounds apart by a blank line.
	var said []string
	spoke := false
	for round := 0; round < h.opts.MaxRounds; round++ {
		tools := s.Tools()
		rec := Round{Tools: s.ToolNames(), ToolTokens: toolTokens(tools), AllToolsTokens: h.allToolsTokens(s.snap)}
		req := base
		req.Model, req.Messages, req.Tools, req.Stream = model, msgs, tools, false
		var msg openai.ChatCompletionMessage
		var finish openai.FinishReason
		var err error
		if onEvent != nil {
			onEvent(Event{Kind: EventRound, Round: round + 1})
			first := true
			msg, finish, err = h.model.Stream(ctx, req, func(text string) {
				if first && spoke {
					onEvent(Event{Kind: EventText, Text: roundBreak, Round: round + 1})
				}
				first, spoke = false, true
				onEvent(Event{Kind: EventText, Text: text, Round: round + 1})
			}, s.host.meter.add)
		} else {
			req.StreamOptions = nil
			var out openai.ChatCompletionResponse
			out, err = s.host.complete(ctx, h.model, req)
			if err == nil {
				msg, finish = out.Choices[0].Message, out.Choices[0].FinishReason
			}
		}
		if err != nil {
			resp.Answer = strings.Join(said, roundBreak)
			return h.finish(resp, s, msgs), fmt.Errorf("host: round %d: model: %w", round+1, err)
		}
		if msg.Content != "" {
			said = append(said, msg.Content)
		}
		resp.Answer = strings.Join(said, roundBreak)
		if msg.Role == "" {
			msg.Role = openai.ChatMessageRoleAssistant
		}
		if client := s.clientCalls(msg.ToolCalls); len(client) > 0 {
			// The client runs these; the request ends here. The first call's
			// id carries what the request found and did, for the next.
			msg.ToolCalls = client
			h.logRound(round+1, rec)
			resp.Rounds = append(resp.Rounds, rec)
			resp.ClientCalls, resp.FinishReason = h.seal(client, s.Discovered(), msgs[fresh:]), openai.FinishReasonToolCalls
			msgs = append(msgs, msg)
			return h.finish(resp, s, msgs), nil
		}
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			h.logRound(round+1, rec)
			resp.Rounds = append(resp.Rounds, rec)
			resp.FinishReason = finish
			if resp.FinishReason == "" {
				resp.FinishReason = openai.FinishReasonStop
			}
			return h.finish(resp, s, msgs), nil
		}
		if onEvent != nil {
			for _, c := range msg.ToolCalls {
				onEvent(Event{Kind: EventToolCall, Round: round + 1, Call: &ToolCallRecord{Name: c.Function.Name, Arguments: c.Function.Arguments}})
			}
		}
		results, records := h.runCalls(ctx, s, msg.ToolCalls)
		rec.ToolCalls = records
		if onEvent != nil {
			for i := range records {
				onEvent(Event{Kind: EventToolResult, Round: round + 1, Call: &records[i], Result: results[i].Content})
			}
		}
		resp.Rounds = append(resp.Rounds, rec)
		h.logRound(round+1, rec)
		msgs = append(msgs, results...)
	}
	// The round limit: what was said stands, cut short as a token limit is.
	resp.FinishReason = openai.FinishReasonLength
	return h.finish(resp, s, msgs), ErrMaxRounds
}

// roundBreak separates the text of two rounds in an answer.
const roundBreak = "\n\n"

func addUsage(sum *openai.Usage, u openai.Usage) {
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.TotalTokens += u.TotalTokens
}

// logRound writes a round's telemetry to the log.
func (h *Host) logRound(n int, r Round) {
	var calls []string
	for _, c := range r.ToolCalls {
		outcome := "ok"
		if c.IsError {
			outcome = "error"
		}
		entry := fmt.Sprintf("%s:%s:%s", c.Name, outcome, c.Duration.Round(time.Microsecond))
		if c.Search != nil {
			entry += fmt.Sprintf("(mode=%s path=%s found=%d)", c.Search.Mode, c.Search.Path, len(c.Search.Found))
		}
		calls = append(calls, entry)
	}
	h.log.Info("round", "round", n, "tools_sent", r.Tools, "tool_tokens", r.ToolTokens,
		"all_tools_tokens", r.AllToolsTokens, "calls", calls)
}

func (h *Host) finish(r *Response, s *Session, msgs []openai.ChatCompletionMessage) *Response {
	r.Messages = msgs
	r.Discovered = s.Discovered()
	r.Usage = s.host.meter.total()
	return r
}

func (h *Host) withSystem(in []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	prompt := h.opts.SystemPrompt
	if prompt == "-" {
		return append([]openai.ChatCompletionMessage(nil), in...)
	}
	if prompt == "" {
		prompt = DefaultSystemPrompt
	}
	out := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: prompt}}
	return append(out, in...)
}

// runCalls executes a round's tool calls concurrently and returns their
// tool messages in the order of the calls.
func (h *Host) runCalls(ctx context.Context, s *Session, calls []openai.ToolCall) ([]openai.ChatCompletionMessage, []ToolCallRecord) {
	msgs := make([]openai.ChatCompletionMessage, len(calls))
	recs := make([]ToolCallRecord, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res, search := s.Call(ctx, c.Function.Name, c.Function.Arguments)
			recs[i] = ToolCallRecord{Name: c.Function.Name, Plugin: s.PluginOf(c.Function.Name), Arguments: c.Function.Arguments,
				IsError: res.IsError, Duration: time.Since(start), Search: search, Structured: res.Structured, Artifacts: res.Artifacts}
			content := res.Content
			if res.IsError && content == "" {
				content = "error"
			}
			content += h.artifactLines(res.Artifacts)
			msgs[i] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID, Name: c.Function.Name, Content: content}
		}()
	}
	wg.Wait()
	return msgs, recs
}

// Call runs one tool call as the agent loop does: tool_search, an
// always-on tool, or a deferred tool this session discovered (others are
// refused, unless Options.AutoDiscover). Everything the model can act on —
// bad arguments, unknown tools, plugin failures — comes back as a Result
// with IsError, never as a Go error. The SearchRecord is set for
// tool_search. Safe for concurrent use.
func (s *Session) Call(ctx context.Context, name, args string) (Result, *SearchRecord) {
	h := s.host
	if name == ToolSearchName {
		return s.toolSearch(ctx, args)
	}
	raw := json.RawMessage(args)
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if t, ok := h.byName[name]; ok {
		if !json.Valid(raw) {
			return Result{Content: fmt.Sprintf("arguments for %s are not valid JSON: %s", name, args), IsError: true}, nil
		}
		if msg := validateArgs(h.schemas[name], raw); msg != "" {
			return Result{Content: msg, IsError: true}, nil
		}
		var res Result
		var err error
		if t.SessionCall != nil {
			res, err = t.SessionCall(ctx, s, raw)
		} else {
			res, err = t.Call(ctx, raw)
		}
		if err != nil {
			return Result{Content: fmt.Sprintf("%s failed: %v", name, err), IsError: true}, nil
		}
		return res, nil
	}
	tool, ok := s.snap.Tool(name)
	if !ok {
		return Result{Content: fmt.Sprintf("there is no tool %q. Use %s to find a tool for what you need.", name, ToolSearchName), IsError: true}, nil
	}
	if !s.isDiscovered(tool.Name()) {
		if !h.opts.AutoDiscover {
			return Result{Content: fmt.Sprintf("tool %q is not available yet. Call %s first to find the tools you need.", name, ToolSearchName), IsError: true}, nil
		}
		s.discover([]string{tool.Name()})
	}
	if s.wasm == nil {
		return Result{Content: fmt.Sprintf("tool %q cannot run: this host has no plugin runtime", name), IsError: true}, nil
	}
	res, err := s.wasm.CallResult(ctx, tool, raw)
	for retry := 0; retry < 2 && errors.Is(err, wasm.ErrDiscarded) && ctx.Err() == nil; retry++ {
		// Another call of this session (one the client cancelled, one that
		// trapped) killed the instance while this call waited for it:
		// nothing of this call ran, and the session's next instance is a
		// fresh one. (A call whose context ended discards its instance as
		// it returns, so wazero's close never lands in a later call.)
		res, err = s.wasm.CallResult(ctx, tool, raw)
	}
	if err != nil {
		return Result{Content: fmt.Sprintf("tool %q failed: %v", name, err), IsError: true}, nil
	}
	return Result{Content: res.Content, IsError: res.IsError, Structured: res.Structured, Artifacts: res.Artifacts}, nil
}

// toolTokens counts the tokens of tool definitions as sent.
func toolTokens(tools []openai.Tool) int {
	total := 0
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			return 0
		}
		n, err := tokens.Count(string(b))
		if err != nil {
			return 0
		}
		total += n
	}
	return total
}

// allToolsTokens is the cost of sending every tool of a snapshot, cached
// for the latest snapshot.
func (h *Host) allToolsTokens(snap *catalog.Snapshot) int {
	h.tokMu.Lock()
	defer h.tokMu.Unlock()
	if h.tokSnap == snap {
		return h.tokAll
	}
	var all []openai.Tool
	for _, t := range h.goTools {
		all = append(all, function(t.Name, t.Description, t.Parameters))
	}
	for _, t := range snap.Tools {
		all = append(all, function(t.Name(), t.Spec.Description, t.Spec.Parameters))
	}
	h.tokSnap, h.tokAll = snap, toolTokens(all)
	return h.tokAll
}

// Upstream is an OpenAI-compatible chat completions endpoint the host
// calls over HTTP itself (Options.Upstream; host/upstream).
type Upstream = upstream.Endpoint

// ModelError is a model call that failed: what the upstream answered, or
// that it did not (host/upstream's Error). Callers map it to their own
// answer (an HTTP front end passes a 4xx or a 429 through, a 5xx or no
// answer becomes a 502, a timeout a 504); its Error text is for logs: it
// may name the upstream's address.
type ModelError = upstream.Error

// complete makes one plain model call on c with its retry policy; the
// usage goes to the view's meter.
func (h *Host) complete(ctx context.Context, c *upstream.Client, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	out, err := c.Complete(ctx, req)
	if err == nil {
		h.meter.add(out.Usage)
	}
	return out, err
}

// compiledSchema is a tool's parameter schema, or why it does not compile.
type compiledSchema struct {
	sch *jsonschema.Schema
	err error
}

// validateArgs checks arguments against a schema; "" means valid.
func validateArgs(schema compiledSchema, args json.RawMessage) string {
	sch, err := schema.sch, schema.err
	if err != nil {
		return "the tool's parameter schema is invalid: " + err.Error()
	}
	v, err := decodeAny(args)
	if err != nil {
		return "arguments are not valid JSON: " + err.Error()
	}
	if err := sch.Validate(v); err != nil {
		return "arguments do not match the tool's schema: " + oneLine(err.Error())
	}
	return ""
}

// sortedNames is used in messages the model reads.
func sortedNames(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
