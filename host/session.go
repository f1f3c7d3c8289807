package host

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

// Session is one request: its catalog snapshot, the deferred tools it has
// discovered (in discovery order, never withdrawn), its search cache and
// budget, and its plugin instances. Sessions share nothing mutable. A
// Session is safe for concurrent use (a round's tool calls run at once).
type Session struct {
	host   *Host // a view of the Host metering this session's model calls
	snap   *catalog.Snapshot
	wasm   *wasm.Session
	client []openai.Tool // the request's client-side tools (RunRequest)

	mu         sync.Mutex
	discovered []string        // tool names, discovery order
	known      map[string]bool // discovered, by name
	searches   map[string]string
	nSearches  int
	budget     int // searches allowed; negative: no limit
	state      map[string]any
}

// State returns the request's value for key, made by init on first use:
// per-request state for always-on tools (a todo list). Values live as long
// as the request.
func (s *Session) State(key string, init func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[string]any{}
	}
	v, ok := s.state[key]
	if !ok {
		v = init()
		s.state[key] = v
	}
	return v
}

// NewSession starts a session outside the agent loop, for a front end that
// drives tool calls itself (an MCP client): the catalog as it is now,
// nothing discovered. Its searches are not budgeted (the budget guards the
// agent loop against a model that searches in circles; here the client
// drives). Close it when the client goes.
func (h *Host) NewSession() *Session {
	s := h.newSession()
	s.budget = -1
	return s
}

func (h *Host) newSession() *Session {
	s := &Session{host: &Host{core: h.core, meter: &usageMeter{}}, snap: h.snapshot(), known: map[string]bool{}, searches: map[string]string{}, budget: h.opts.Search.Budget}
	if h.runtime != nil {
		s.wasm = h.runtime.NewSession()
	}
	return s
}

// Close ends the session and closes its plugin instances; plugin state
// goes with them.
func (s *Session) Close() {
	if s.wasm != nil {
		s.wasm.Close(context.Background())
	}
}

// clientCalls returns the calls to the request's client tools.
func (s *Session) clientCalls(calls []openai.ToolCall) []openai.ToolCall {
	var out []openai.ToolCall
	for _, c := range calls {
		for _, t := range s.client {
			if t.Function.Name == c.Function.Name {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// PluginOf names the plugin of a deferred tool ("" for any other name).
func (s *Session) PluginOf(name string) string {
	if s.host.ownTool(name) {
		return ""
	}
	if t, ok := s.snap.Tool(name); ok {
		return t.Plugin.Name()
	}
	return ""
}

// Discovered returns the discovered tool names in discovery order.
func (s *Session) Discovered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.discovered...)
}

// discover adds tools to the session (once each, in the order given) and
// wakes their plugins in the background.
func (s *Session) discover(names []string) {
	s.mu.Lock()
	var wake []*catalog.Plugin
	for _, n := range names {
		t, ok := s.snap.Tool(n)
		if !ok || s.known[t.Name()] {
			continue
		}
		s.known[t.Name()] = true
		s.discovered = append(s.discovered, t.Name())
		wake = append(wake, t.Plugin)
	}
	s.mu.Unlock()
	if s.wasm != nil {
		seen := map[*catalog.Plugin]bool{}
		for _, p := range wake {
			if !seen[p] {
				seen[p] = true
				s.wasm.Prepare(p)
			}
		}
	}
}

func (s *Session) isDiscovered(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[name]
}

// Tools is this round's function list: always-on tools in registration
// order, the request's client tools in its order, tool_search, then the
// discovered tools in discovery order. The same session state gives the
// same bytes.
func (s *Session) Tools() []openai.Tool {
	var out []openai.Tool
	for _, t := range s.host.goTools {
		out = append(out, function(t.Name, t.Description, t.Parameters))
	}
	out = append(out, s.client...)
	out = append(out, function(ToolSearchName, s.host.toolSearchDescription(), toolSearchParams))
	for _, name := range s.Discovered() {
		t, _ := s.snap.Tool(name)
		out = append(out, function(t.Name(), t.Spec.Description, t.Spec.Parameters))
	}
	return out
}

// ToolNames lists the names Tools would send.
func (s *Session) ToolNames() []string {
	var out []string
	for _, t := range s.Tools() {
		out = append(out, t.Function.Name)
	}
	return out
}

var emptyParams = json.RawMessage(`{"type":"object","properties":{}}`)

func function(name, desc string, params json.RawMessage) openai.Tool {
	if len(params) == 0 {
		params = emptyParams
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: name, Description: desc, Parameters: params}}
}

// A continuation is the state a request hands its client in the ID of its
// first client tool call: the tools it discovered and the messages it
// added server-side (the model's calls and their results), so that the
// conversation's next request, which sends the ID back, goes on with them.
// It is sealed: deflated, then signed with HMAC-SHA256 over the payload
// and the call's name and arguments, so it cannot be forged or moved to
// another call. Nothing is kept on the server.
//
// The signature guards the trail and spares no real secret: a client can
// always search for a tool itself, and write any message it likes into its
// own history. What it can never do is reach another conversation's
// discoveries: there is no shared state to reach.
const sealPrefix = "call_ts1."

// maxSealedTrail bounds a sealed payload; past it the trail is left out
// (the discoveries stay).
const maxSealedTrail = 32 << 10

type sealed struct {
	ID         string                         `json:"id"`
	Discovered []string                       `json:"d,omitempty"`
	Trail      []openai.ChatCompletionMessage `json:"t,omitempty"`
}

// seal returns calls with the first call's ID sealed.
func (h *Host) seal(calls []openai.ToolCall, discovered []string, trail []openai.ChatCompletionMessage) []openai.ToolCall {
	out := slices.Clone(calls)
	p := sealed{ID: calls[0].ID, Discovered: discovered, Trail: trail}
	payload := deflate(p)
	if len(payload) > maxSealedTrail {
		h.log.Warn("continuation trail left out: too large", "bytes", len(payload))
		p.Trail = nil
		payload = deflate(p)
	}
	out[0].ID = sealPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(h.mac(payload, calls[0].Function))
	return out
}

func (h *Host) mac(payload []byte, f openai.FunctionCall) []byte {
	m := hmac.New(sha256.New, h.sealKey)
	m.Write(payload)
	m.Write([]byte{0})
	m.Write([]byte(f.Name))
	m.Write([]byte{0})
	m.Write([]byte(f.Arguments))
	return m.Sum(nil)[:16]
}

func deflate(v any) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	json.NewEncoder(w).Encode(v)
	w.Close()
	return b.Bytes()
}

// unseal restores the continuations of a conversation: each assistant
// message whose first tool call has a sealed ID that verifies gets its
// trail put back before it and its IDs (there and in the tool results)
// back to the model's; the discovered tools are returned, in order. A
// sealed ID that does not verify is left as it is.
func (h *Host) unseal(in []openai.ChatCompletionMessage) ([]openai.ChatCompletionMessage, []string) {
	var out []openai.ChatCompletionMessage
	var found []string
	ids := map[string]string{}
	for _, m := range in {
		if m.Role == openai.ChatMessageRoleTool && ids[m.ToolCallID] != "" {
			m.ToolCallID = ids[m.ToolCallID]
		}
		if m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) > 0 {
			if p, ok := h.open(m.ToolCalls[0]); ok {
				ids[m.ToolCalls[0].ID] = p.ID
				m.ToolCalls = slices.Clone(m.ToolCalls)
				m.ToolCalls[0].ID = p.ID
				out = append(out, p.Trail...)
				for _, n := range p.Discovered {
					if !slices.Contains(found, n) {
						found = append(found, n)
					}
				}
			}
		}
		out = append(out, m)
	}
	return out, found
}

func (h *Host) open(c openai.ToolCall) (sealed, bool) {
	var p sealed
	rest, ok := strings.CutPrefix(c.ID, sealPrefix)
	if !ok {
		return p, false
	}
	enc, sig, ok := strings.Cut(rest, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, h.mac(payload, c.Function)) {
		h.log.Warn("a sealed tool call id did not verify; ignored", "id_prefix", c.ID[:min(len(c.ID), 40)])
		return p, false
	}
	r := flate.NewReader(bytes.NewReader(payload))
	defer r.Close()
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&p); err != nil {
		return p, false
	}
	return p, true
}
