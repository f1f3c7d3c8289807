// Package scripted is a language model for tests: an OpenAI-compatible
// server (chat completions, plain and streamed, and the model list) that
// follows a fixed script instead of thinking. Tests serve it on 127.0.0.1
// with net/http/httptest, so the host under test speaks the real wire
// protocol to a real HTTP server.
//
// The script: the last user message reads "use TOOL with ARGS to QUERY",
// optionally followed by " then TOOL2 with ARGS2". If TOOL is among the
// tools sent, the model calls it with ARGS at once; otherwise it first
// calls tool_search with QUERY, then TOOL with ARGS. After TOOL's result
// it calls TOOL2 with ARGS2 when there is one; after the last result it
// answers "answer: RESULT". A request without tools is a tool-selection
// request (LLM search mode) and gets Choose.
//
// Faults: Before sees each chat completion request first and may answer
// it itself (an error status, a hang, a dropped connection).
//
// A Model is safe for concurrent use.
package scripted

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Model is the scripted model. The zero value is ready.
type Model struct {
	// Choose answers selection requests (LLM search mode).
	Choose string
	// Cut makes streams stop half way, as a dropped connection would.
	Cut bool
	// Delay is waited before each answer (a model's thinking time).
	Delay time.Duration
	// NoRecord keeps no requests (for load tests).
	NoRecord bool
	// Narrate is text sent along with each tool call (a model that says
	// what it is about to do).
	Narrate string
	// Before, when set, is called with each chat completion request (n
	// counts them from 1, faults included) before the script; returning
	// true means it answered the request itself.
	Before func(n int, w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests []openai.ChatCompletionRequest
	bodies   [][]byte
	calls    int
}

// Calls counts the chat completion requests received, faults included.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Bodies returns the bodies of the requests the script answered, as sent.
func (m *Model) Bodies() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bodies)
}

// Models are the names GET /v1/models lists.
var Models = []string{"scripted", "scripted-large"}

// ToolCall is an assistant message calling one tool.
func ToolCall(id, name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: id, Type: "function",
		Function: openai.FunctionCall{Name: name, Arguments: args}}}}
}

// ServeHTTP answers POST .../chat/completions and GET .../models.
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		list := openai.ModelsList{}
		for _, id := range Models {
			list.Models = append(list.Models, openai.Model{ID: id, Object: "model", OwnedBy: "scripted"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Object string         `json:"object"`
			Data   []openai.Model `json:"data"`
		}{"list", list.Models})
		return
	}
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	if m.Before != nil && m.Before(n, w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !m.NoRecord {
		m.mu.Lock()
		m.requests = append(m.requests, req)
		m.bodies = append(m.bodies, body)
		m.mu.Unlock()
	}
	if m.Delay > 0 {
		time.Sleep(m.Delay)
	}
	msg := m.reply(req)
	usage := openai.Usage{PromptTokens: 10 * len(req.Messages), CompletionTokens: 1 + len(msg.Content)/4}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	if req.Stream {
		var u *openai.Usage
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			u = &usage
		}
		WriteStream(w, msg, finish, u, m.Cut)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion", Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}}, Usage: usage})
}

// WriteStream sends msg as server-sent events: text in small pieces, each
// tool call's arguments split over two chunks, then the finish reason, the
// usage when given, and [DONE]. With cut the stream stops half way.
func WriteStream(w http.ResponseWriter, msg openai.ChatCompletionMessage, finish openai.FinishReason, usage *openai.Usage, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	delta := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
		send(openai.ChatCompletionStreamResponse{ID: "s", Object: "chat.completion.chunk",
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: d, FinishReason: finish}}})
	}
	delta(openai.ChatCompletionStreamChoiceDelta{Role: "assistant"}, "")
	for i := 0; i < len(msg.Content); i += 3 {
		delta(openai.ChatCompletionStreamChoiceDelta{Content: msg.Content[i:min(i+3, len(msg.Content))]}, "")
		if cut && i >= 3 {
			return // the connection drops: no finish, no [DONE]
		}
	}
	for i, c := range msg.ToolCalls {
		idx := i
		half := len(c.Function.Arguments) / 2
		delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &idx, ID: c.ID, Type: "function",
			Function: openai.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments[:half]}}}}, "")
		delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &idx,
			Function: openai.FunctionCall{Arguments: c.Function.Arguments[half:]}}}}, "")
	}
	delta(openai.ChatCompletionStreamChoiceDelta{}, finish)
	if usage != nil {
		send(openai.ChatCompletionStreamResponse{ID: "s", Object: "chat.completion.chunk", Choices: []openai.ChatCompletionStreamChoice{}, Usage: usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

func (m *Model) reply(req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	if len(req.Tools) == 0 { // a selection request
		return openai.ChatCompletionMessage{Role: "assistant", Content: m.Choose}
	}
	var user string
	for _, msg := range req.Messages {
		if msg.Role == "user" {
			user = msg.Content
		}
	}
	var tool, args, query, tool2, args2 string
	fmt.Sscanf(user, "use %s with %s to %s then %s with %s", &tool, &args, &query, &tool2, &args2)
	last := req.Messages[len(req.Messages)-1]
	sent := slices.ContainsFunc(req.Tools, func(t openai.Tool) bool { return t.Function.Name == tool })
	call := func(id, name, args string) openai.ChatCompletionMessage {
		msg := ToolCall(id, name, args)
		msg.Content = m.Narrate
		return msg
	}
	switch {
	case last.Role == "user" && sent:
		return call("c1", tool, args)
	case last.Role == "user":
		return call("c1", "tool_search", fmt.Sprintf(`{"query": %q}`, query))
	case last.Role == "tool" && last.Name == "tool_search":
		return call("c2", tool, args)
	case last.Role == "tool" && last.Name == tool && tool2 != "":
		return call("c3", tool2, args2)
	case last.Role == "tool":
		return openai.ChatCompletionMessage{Role: "assistant", Content: "answer: " + last.Content}
	}
	return openai.ChatCompletionMessage{Role: "assistant", Content: "confused"}
}

// Requests returns the requests received so far, in order.
func (m *Model) Requests() []openai.ChatCompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// ToolsSent lists the tool names of every request received, in order.
func (m *Model) ToolsSent() [][]string {
	var out [][]string
	for _, r := range m.Requests() {
		out = append(out, ToolNames(r))
	}
	return out
}

// ToolNames lists a request's tool names in the order sent.
func ToolNames(r openai.ChatCompletionRequest) []string {
	names := []string{}
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}
