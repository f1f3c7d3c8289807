package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/sdk/abi"
)

// The "client" capability lets a plugin reach the MCP client its call
// came from: log to it, report progress, ask its model (sampling) and its
// user (elicitation). The front end that serves MCP (host/mcpserver)
// implements Client for each call and binds it to the call's context
// with WithClient; a call without one (the chat completions or Responses
// API, the command line) gets an error that says so from every client.*
// op.
//
// Everything a plugin sends through it is bounded here, whoever the
// front end is: the size of each message, the notifications and the
// requests per call (clientLimits), and every request waits at most
// until the call's deadline (the plugin's timeout_ms), since it runs on
// the call's context.

// Client is the MCP client a tool call came from, as the client.* host
// operations reach it. Its methods are called on the call's goroutine
// with the call's context (ended at the call's deadline); an
// implementation must be safe for concurrent use if the same Client is
// bound to calls that run at once.
type Client interface {
	// Log sends notifications/message (the client's logging/setLevel
	// decides whether it is shown).
	Log(ctx context.Context, level, logger string, data json.RawMessage) error
	// Progress sends notifications/progress for the call and reports
	// whether it did: false, with no error, when the call carries no
	// progressToken.
	Progress(ctx context.Context, progress, total float64, message string) (bool, error)
	// Sample asks the client's model (sampling/createMessage). It fails
	// when the client does not offer sampling.
	Sample(ctx context.Context, req *abi.ClientSampleRequest) (*abi.ClientSampleReply, error)
	// Elicit asks the client's user (elicitation/create). It fails when
	// the client does not offer elicitation.
	Elicit(ctx context.Context, req *abi.ClientElicitRequest) (*abi.ClientElicitReply, error)
}

// Limits of the client capability, per call (a call's context bound by
// WithClient). They are not configurable: they keep a plugin from
// flooding a client that is someone's editor or chat window.
const (
	// MaxClientNotifications bounds the log and progress notifications of
	// one call, together.
	MaxClientNotifications = 200
	// MaxClientNotificationBytes bounds one log message's data (its JSON)
	// or one progress message.
	MaxClientNotificationBytes = 8 << 10
	// MaxClientRequests bounds the sampling and elicitation requests of
	// one call, together.
	MaxClientRequests = 8
	// MaxClientRequestBytes bounds one sampling request's messages and
	// system prompt, or one elicitation's message and schema.
	MaxClientRequestBytes = 64 << 10
	// MaxClientReplyBytes bounds what a client's answer may bring back
	// into the plugin (its text, or its form's content as JSON).
	MaxClientReplyBytes = 256 << 10
	// MaxElicitProperties bounds the fields of one elicitation's form.
	MaxElicitProperties = 64
	// DefaultSampleTokens is the max_tokens of a sampling request that
	// names none; MaxSampleTokens caps what one may ask.
	DefaultSampleTokens = 1024
	MaxSampleTokens     = 16384
)

// clientLevels are MCP's log levels (syslog's), in order.
var clientLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

type clientKey struct{}

// boundClient is a Client bound to one call, with what the call has
// spent of its limits.
type boundClient struct {
	c Client

	mu           sync.Mutex
	notes, reqs  int
	lastProgress float64
	progressed   bool
}

// WithClient returns a context for one tool call that came from an MCP
// client c: the plugin's client.* operations in that call reach c, within
// the limits above (counted from this call on). Use a new context per
// call: the limits count per bound context.
//
// The client travels in the context, like the MCP SDK's own routing of a
// request's notifications to the stream of that request: it belongs to
// one call (its progress token, its stream, its deadline) and reaches the
// host function the plugin calls through wazero, which passes the call's
// context and nothing else. Only the client.* host operations read it.
func WithClient(ctx context.Context, c Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, &boundClient{c: c})
}

func clientOf(ctx context.Context) *boundClient {
	b, _ := ctx.Value(clientKey{}).(*boundClient)
	return b
}

// errNoClient is the error of a client.* op in a call no MCP client made.
func errNoClient(op string) error {
	return fmt.Errorf("%s: this call did not come from an MCP client (it came through the chat completions or Responses API, or the "+
		"command line), so there is no client to reach; only a tool called over MCP can use it", op)
}

// clientFeature is the capability feature an op needs.
var clientFeature = map[string]string{abi.OpClientLog: abi.ClientLog, abi.OpClientProgress: abi.ClientProgress,
	abi.OpClientSample: abi.ClientSample, abi.OpClientElicit: abi.ClientElicit}

// intersectClient is what the plugin gets of the client features its
// manifest asks for and the operator grants, in manifest.ClientFeatures'
// order.
func intersectClient(asked, granted []string) []string {
	var out []string
	for _, f := range manifest.ClientFeatures {
		if slices.Contains(asked, f) && slices.Contains(granted, f) {
			out = append(out, f)
		}
	}
	return out
}

// deniedClient lists the features asked for and not granted, as
// "client.log".
func deniedClient(asked, got []string) []string {
	var out []string
	for _, f := range asked {
		if !slices.Contains(got, f) {
			out = append(out, "client."+f)
		}
	}
	return out
}

// clientOp runs one client.* operation of a call, if granted (got is the
// plugin's effective client features).
func clientOp(ctx context.Context, op string, req []byte, got []string) (any, error) {
	feature := clientFeature[op]
	decode := func(v any) error {
		if err := json.Unmarshal(req, v); err != nil {
			return fmt.Errorf("%s: malformed request: %v", op, err)
		}
		return nil
	}
	if !slices.Contains(got, feature) {
		return nil, notGranted("client." + feature)
	}
	b := clientOf(ctx)
	if b == nil {
		return nil, errNoClient(op)
	}
	switch op {
	case abi.OpClientLog:
		var r abi.ClientLogRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if !slices.Contains(clientLevels, r.Level) {
			return nil, fmt.Errorf("%s: level %q is not one of %s", op, r.Level, strings.Join(clientLevels, ", "))
		}
		if len(r.Logger) > 128 || !utf8.ValidString(r.Logger) {
			return nil, fmt.Errorf("%s: the logger name must be UTF-8 of at most 128 bytes", op)
		}
		if len(r.Data) == 0 {
			return nil, fmt.Errorf("%s: no data (a JSON value: a string for a plain message)", op)
		}
		if len(r.Data) > MaxClientNotificationBytes {
			return nil, fmt.Errorf("%s: the message is %d bytes; at most %d", op, len(r.Data), MaxClientNotificationBytes)
		}
		if err := b.note(op, nil); err != nil {
			return nil, err
		}
		return nil, wrapClient(op, b.c.Log(ctx, r.Level, r.Logger, r.Data))
	case abi.OpClientProgress:
		var r abi.ClientProgressRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if len(r.Message) > MaxClientNotificationBytes {
			return nil, fmt.Errorf("%s: the message is %d bytes; at most %d", op, len(r.Message), MaxClientNotificationBytes)
		}
		if r.Total < 0 || r.Progress < 0 {
			return nil, fmt.Errorf("%s: progress and total must not be negative", op)
		}
		if err := b.note(op, &r.Progress); err != nil {
			return nil, err
		}
		sent, err := b.c.Progress(ctx, r.Progress, r.Total, r.Message)
		if err != nil {
			return nil, wrapClient(op, err)
		}
		return abi.ClientProgressReply{Sent: sent}, nil
	case abi.OpClientSample:
		var r abi.ClientSampleRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if err := checkSample(&r); err != nil {
			return nil, fmt.Errorf("%s: %v", op, err)
		}
		if err := b.request(op); err != nil {
			return nil, err
		}
		out, err := b.c.Sample(ctx, &r)
		if err != nil {
			return nil, wrapClient(op, err)
		}
		if len(out.Text) > MaxClientReplyBytes {
			return nil, fmt.Errorf("%s: the client's answer is %d bytes; at most %d reach a plugin", op, len(out.Text), MaxClientReplyBytes)
		}
		return out, nil
	case abi.OpClientElicit:
		var r abi.ClientElicitRequest
		if err := decode(&r); err != nil {
			return nil, err
		}
		if len(r.Message)+len(r.Schema) > MaxClientRequestBytes {
			return nil, fmt.Errorf("%s: the message and schema are %d bytes; at most %d", op, len(r.Message)+len(r.Schema), MaxClientRequestBytes)
		}
		if strings.TrimSpace(r.Message) == "" {
			return nil, fmt.Errorf("%s: no message (say what the user is asked for)", op)
		}
		if err := CheckElicitSchema(r.Schema); err != nil {
			return nil, fmt.Errorf("%s: %v", op, err)
		}
		if err := b.request(op); err != nil {
			return nil, err
		}
		out, err := b.c.Elicit(ctx, &r)
		if err != nil {
			return nil, wrapClient(op, err)
		}
		if len(out.Content) > MaxClientReplyBytes {
			return nil, fmt.Errorf("%s: the user's answer is %d bytes; at most %d reach a plugin", op, len(out.Content), MaxClientReplyBytes)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown host operation %q", op)
}

// wrapClient prefixes a client's error with the op (nil stays nil).
func wrapClient(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer before the call's deadline: %w", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// note spends one notification of the call; progress, when set, must
// be above the call's last.
func (b *boundClient) note(op string, progress *float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.notes >= MaxClientNotifications {
		return fmt.Errorf("%s: quota exceeded: at most %d log and progress notifications per call", op, MaxClientNotifications)
	}
	if progress != nil {
		if b.progressed && *progress <= b.lastProgress {
			return fmt.Errorf("%s: progress must increase from one notification to the next (it was %g, now %g)", op, b.lastProgress, *progress)
		}
		b.lastProgress, b.progressed = *progress, true
	}
	b.notes++
	return nil
}

// request spends one sampling or elicitation request of the call.
func (b *boundClient) request(op string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reqs >= MaxClientRequests {
		return fmt.Errorf("%s: quota exceeded: at most %d sampling and elicitation requests per call", op, MaxClientRequests)
	}
	b.reqs++
	return nil
}

// checkSample checks a sampling request and sets its default max_tokens.
func checkSample(r *abi.ClientSampleRequest) error {
	if len(r.Messages) == 0 {
		return errors.New("no messages")
	}
	size := len(r.SystemPrompt)
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("messages[%d]: role %q is not user or assistant", i, m.Role)
		}
		size += len(m.Text)
	}
	for _, s := range r.Stop {
		size += len(s)
	}
	if size > MaxClientRequestBytes {
		return fmt.Errorf("the request's text is %d bytes; at most %d", size, MaxClientRequestBytes)
	}
	switch {
	case r.MaxTokens < 0 || r.MaxTokens > MaxSampleTokens:
		return fmt.Errorf("max_tokens %d is out of range (1 to %d; 0 for %d)", r.MaxTokens, MaxSampleTokens, DefaultSampleTokens)
	case r.MaxTokens == 0:
		r.MaxTokens = DefaultSampleTokens
	}
	if t := r.Temperature; t != nil && (*t < 0 || *t > 2) {
		return fmt.Errorf("temperature %g is out of range (0 to 2)", *t)
	}
	return nil
}

// CheckElicitSchema checks a requested schema as MCP restricts it: an
// object whose properties are flat: strings (with enum, oneOf of
// const/title, or the legacy enumNames), numbers, integers, booleans, or
// arrays whose items are enumerated strings (enum, or anyOf of
// const/title).
func CheckElicitSchema(raw json.RawMessage) error {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("the schema is not a JSON object: %v", err)
	}
	if s.Type != "object" {
		return fmt.Errorf(`the schema's type must be "object", not %q`, s.Type)
	}
	if len(s.Properties) > MaxElicitProperties {
		return fmt.Errorf("%d properties; a form has at most %d", len(s.Properties), MaxElicitProperties)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if err := checkElicitProperty(s.Properties[name]); err != nil {
			return fmt.Errorf("property %q: %v", name, err)
		}
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return fmt.Errorf("required property %q is not among the properties", r)
		}
	}
	return nil
}

// elicitProperty is what checkElicitProperty reads of a property.
type elicitProperty struct {
	Type       string            `json:"type"`
	Enum       []json.RawMessage `json:"enum"`
	EnumNames  []string          `json:"enumNames"`
	OneOf      []titledConst     `json:"oneOf"`
	AnyOf      []titledConst     `json:"anyOf"`
	Items      *elicitProperty   `json:"items"`
	Properties json.RawMessage   `json:"properties"`
}

type titledConst struct {
	Const *string `json:"const"`
	Title string  `json:"title"`
}

func checkElicitProperty(raw json.RawMessage) error {
	var p elicitProperty
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("not a schema object: %v", err)
	}
	if len(p.Properties) > 0 {
		return errors.New("nested properties: only flat forms can be asked for")
	}
	switch p.Type {
	case "string":
		if len(p.EnumNames) > 0 && len(p.EnumNames) != len(p.Enum) {
			return fmt.Errorf("%d enumNames for %d enum values", len(p.EnumNames), len(p.Enum))
		}
		return checkConsts(p.OneOf, "oneOf")
	case "number", "integer", "boolean":
		if len(p.Enum)+len(p.OneOf)+len(p.AnyOf) > 0 {
			return fmt.Errorf("enumerations are for strings, not %s", p.Type)
		}
		return nil
	case "array":
		it := p.Items
		if it == nil || (len(it.Enum) == 0 && len(it.AnyOf) == 0) {
			return errors.New("an array must have items that enumerate strings (enum, or anyOf of const and title)")
		}
		if it.Type != "" && it.Type != "string" {
			return fmt.Errorf("array items must be strings, not %s", it.Type)
		}
		return checkConsts(it.AnyOf, "anyOf")
	}
	return fmt.Errorf("type %q is not string, number, integer, boolean or array", p.Type)
}

func checkConsts(cs []titledConst, field string) error {
	for i, c := range cs {
		if c.Const == nil {
			return fmt.Errorf("%s[%d] has no const string", field, i)
		}
	}
	return nil
}
