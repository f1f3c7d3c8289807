package host

import (
	"context"
	"encoding/json"
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
	s := &Session{host: &Host{core: h.core, meter: &usageMeter{}, tenant: h.tenant}, snap: h.snapshot(), known: map[string]bool{}, searches: map[string]string{}, budget: h.opts.Search.Budget}
	if h.runtime != nil {
		s.wasm = h.runtime.NewTenantSession(h.tenant) // its plugin memory and database slots count against the tenant's shares
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
