package openaiapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

// POST /v1/responses is OpenAI's Responses API over the same agent loop as
// chat completions (the upstream model stays a chat completions endpoint):
// the request is turned into a chat completion request, run with
// host.Host.RunRequest, and the outcome turned into a response object (or
// the Responses API's stream of events).
//
// Served: input as text or items (messages with input_text, output_text
// and input_image parts; function_call and function_call_output items;
// reasoning items are skipped), instructions, function tools (the client's,
// honoured as in chat completions: a call to one ends the response with a
// function_call item whose call_id carries the continuation), tool_choice
// "auto" and "none", text.format, temperature, top_p, max_output_tokens,
// parallel_tool_calls, reasoning.effort, metadata, store: false with the
// client sending the items back, previous_response_id when the server
// keeps responses (Options.KeepResponses), streaming with the Responses
// event types, usage, errors in OpenAI's shape.
//
// Refused with a 400 that says so: hosted tools (web_search, file_search,
// code_interpreter, computer use, image_generation, mcp, ...), background
// mode, conversations, stored prompts, item references, input files, and
// previous_response_id on a server that keeps no responses.

const responsesDocs = "https://platform.openai.com/docs/api-reference/responses/create"

// responsesRequest is what POST /v1/responses reads; other fields are
// ignored.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       json.RawMessage   `json:"instructions"`
	Tools              []responseTool    `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	PreviousResponseID string            `json:"previous_response_id"`
	Temperature        *float32          `json:"temperature"`
	TopP               *float32          `json:"top_p"`
	MaxOutputTokens    int               `json:"max_output_tokens"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Metadata           map[string]string `json:"metadata"`
	User               string            `json:"user"`
	Text               *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Background   bool            `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
}

// responseTool is a tool of the request: a function, or a hosted tool
// (refused).
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// inputItem is one item of input (or of a stored response).
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// contentPart is one part of a message's content.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL string          `json:"image_url"`
	Detail   string          `json:"detail"`
	FileID   string          `json:"file_id"`
	Raw      json.RawMessage `json:"-"`
}

func bad(param, format string, args ...any) error {
	return &fieldError{param: param, msg: fmt.Sprintf(format, args...)}
}

// hostedTools are the Responses API's built-in tools: OpenAI runs them,
// this server does not.
const hostedHint = "Toolshed runs its own tools (found with tool_search); declare your client's own tools as type \"function\""

// chatRequest turns a Responses request into the chat completion request
// the agent loop runs, prior (the conversation of previous_response_id)
// first. The messages it returns besides are the conversation to keep
// (without instructions).
func (rr *responsesRequest) chatRequest(prior []openai.ChatCompletionMessage) (openai.ChatCompletionRequest, []openai.ChatCompletionMessage, error) {
	var req openai.ChatCompletionRequest
	switch {
	case rr.Background:
		return req, nil, bad("background", "background mode is not served: run the request in the foreground (stream: true to see it progress)")
	case len(rr.Conversation) > 0 && string(rr.Conversation) != "null":
		return req, nil, bad("conversation", "conversations are not served: send the items (store: false) or previous_response_id")
	case len(rr.Prompt) > 0 && string(rr.Prompt) != "null":
		return req, nil, bad("prompt", "stored prompts are not served: send instructions and input")
	}
	input, err := inputMessages(rr.Input)
	if err != nil {
		return req, nil, err
	}
	convo := append(append([]openai.ChatCompletionMessage(nil), prior...), input...)
	if len(convo) == 0 {
		return req, nil, bad("input", "input is empty")
	}
	instructions, err := textOf(rr.Instructions, "instructions")
	if err != nil {
		return req, nil, err
	}
	if instructions != "" {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: instructions})
	}
	req.Messages = append(req.Messages, convo...)
	// metadata is echoed in the response, not sent upstream (OpenAI's chat
	// completions take it only with store).
	req.Model, req.User = rr.Model, rr.User
	if rr.Temperature != nil {
		req.Temperature = *rr.Temperature
	}
	if rr.TopP != nil {
		req.TopP = *rr.TopP
	}
	req.MaxTokens = rr.MaxOutputTokens
	if rr.ParallelToolCalls != nil {
		req.ParallelToolCalls = *rr.ParallelToolCalls // a nil *bool would go upstream as null
	}
	if rr.Reasoning != nil {
		req.ReasoningEffort = rr.Reasoning.Effort
	}
	for i, t := range rr.Tools {
		if t.Type != "function" {
			return req, nil, bad(fmt.Sprintf("tools[%d]", i), "tools[%d]: the hosted tool %q is not served: %s", i, t.Type, hostedHint)
		}
		params := any(map[string]any{"type": "object", "properties": map[string]any{}})
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			params = t.Parameters
		}
		req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict != nil && *t.Strict}})
	}
	if req.ToolChoice, err = toolChoice(rr.ToolChoice); err != nil {
		return req, nil, err
	}
	if rr.Text != nil {
		if req.ResponseFormat, err = textFormat(rr.Text.Format); err != nil {
			return req, nil, err
		}
	}
	return req, convo, nil
}

// toolChoice is tool_choice as chat completions has it (the host refuses
// what it cannot honour, with the same words).
func toolChoice(raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, bad("tool_choice", "tool_choice must be a string or an object")
	}
	if c.Type != "function" {
		return nil, bad("tool_choice", "tool_choice %q is not served: %s", c.Type, hostedHint)
	}
	return openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: c.Name}}, nil
}

// textFormat is text.format as a chat completion's response_format.
func textFormat(raw json.RawMessage) (*openai.ChatCompletionResponseFormat, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      bool            `json:"strict"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, bad("text.format", "text.format must be an object with a type")
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}, nil
	case "json_schema":
		if len(f.Schema) == 0 {
			return nil, bad("text.format.schema", "text.format of type json_schema needs a schema")
		}
		return &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}, nil
	}
	return nil, bad("text.format.type", "text.format.type %q is not served (text, json_object or json_schema)", f.Type)
}

// textOf reads a string, or a list of text parts (or of messages'
// text), as one text.
func textOf(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", bad(param, "%s must be a string or a list of text parts", param)
	}
	var b strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "refusal", "summary_text", "reasoning_text":
			b.WriteString(p.Text)
		default:
			return "", bad(fmt.Sprintf("%s[%d]", param, i), "%s[%d]: a part of type %q is not served here (text parts only)", param, i, p.Type)
		}
	}
	return b.String(), nil
}

// inputMessages turns input (text or items) into chat messages: a
// message item is a message; function_call items (one after another, or
// after an assistant message) are one assistant message's tool calls;
// function_call_output is a tool message; reasoning items are skipped.
func inputMessages(raw json.RawMessage) ([]openai.ChatCompletionMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad("input", "input must be a string or a list of items")
	}
	var out []openai.ChatCompletionMessage
	canAddCall := false // the last message is an assistant's that may take tool calls
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			m, err := itemMessage(it, param)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			canAddCall = m.Role == openai.ChatMessageRoleAssistant
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, bad(param, "%s: a function_call needs call_id and name", param)
			}
			call := openai.ToolCall{ID: it.CallID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: it.Name, Arguments: it.Arguments}}
			if !canAddCall {
				out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant})
				canAddCall = true
			}
			last := &out[len(out)-1]
			last.ToolCalls = append(last.ToolCalls, call)
		case "function_call_output":
			if it.CallID == "" {
				return nil, bad(param, "%s: a function_call_output needs the call_id of its function_call", param)
			}
			content, err := textOf(it.Output, param+".output")
			if err != nil {
				return nil, err
			}
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: it.CallID, Content: content})
			canAddCall = false
		case "reasoning":
			// This server hands out none; another's carries nothing the
			// upstream chat model could read.
		case "item_reference":
			return nil, bad(param, "%s: item references are not served: send the items themselves", param)
		default:
			return nil, bad(param, "%s: items of type %q are not served (%s)", param, it.Type, hostedHint)
		}
	}
	return out, nil
}

// itemMessage is one message item as a chat message.
func itemMessage(it inputItem, param string) (openai.ChatCompletionMessage, error) {
	m := openai.ChatCompletionMessage{Role: it.Role}
	switch it.Role {
	case "user", "assistant", "system":
	case "developer":
		m.Role = openai.ChatMessageRoleSystem
	default:
		return m, bad(param+".role", "%s: role %q is not one of user, assistant, system, developer", param, it.Role)
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		m.Content = s
		return m, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return m, bad(param+".content", "%s: content must be a string or a list of parts", param)
	}
	var text strings.Builder
	var multi []openai.ChatMessagePart
	images := false
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "refusal":
			text.WriteString(p.Text)
			multi = append(multi, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Text})
		case "input_image":
			if p.ImageURL == "" {
				return m, bad(fmt.Sprintf("%s.content[%d]", param, j), "%s.content[%d]: an input_image needs an image_url (file ids are not served)", param, j)
			}
			images = true
			multi = append(multi, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: p.ImageURL, Detail: openai.ImageURLDetail(p.Detail)}})
		default:
			return m, bad(fmt.Sprintf("%s.content[%d]", param, j), "%s.content[%d]: a part of type %q is not served (input_text, output_text, input_image)", param, j, p.Type)
		}
	}
	if images {
		m.MultiContent = multi
	} else {
		m.Content = text.String()
	}
	return m, nil
}

// The response object and its items, as OpenAI sends them.
type (
	responseObject struct {
		ID                 string            `json:"id"`
		Object             string            `json:"object"`
		CreatedAt          int64             `json:"created_at"`
		Status             string            `json:"status"`
		Background         bool              `json:"background"`
		Error              *responseError    `json:"error"`
		IncompleteDetails  *incomplete       `json:"incomplete_details"`
		Instructions       json.RawMessage   `json:"instructions"`
		MaxOutputTokens    *int              `json:"max_output_tokens"`
		Model              string            `json:"model"`
		Output             []any             `json:"output"`
		ParallelToolCalls  bool              `json:"parallel_tool_calls"`
		PreviousResponseID *string           `json:"previous_response_id"`
		Store              bool              `json:"store"`
		Temperature        *float32          `json:"temperature"`
		Text               json.RawMessage   `json:"text"`
		ToolChoice         json.RawMessage   `json:"tool_choice"`
		Tools              []responseTool    `json:"tools"`
		TopP               *float32          `json:"top_p"`
		Truncation         string            `json:"truncation"`
		Usage              *responseUsage    `json:"usage"`
		User               *string           `json:"user"`
		Metadata           map[string]string `json:"metadata"`
		Toolshed           *toolshedTrace    `json:"toolshed,omitempty"`
	}
	responseError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	incomplete struct {
		Reason string `json:"reason"`
	}
	responseUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	messageItem struct {
		Type    string       `json:"type"`
		ID      string       `json:"id"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	functionCallItem struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
)

func newItemID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// skeleton is the response object before the run: what the request asked.
func (rr *responsesRequest) skeleton(id, model string, created int64, store bool) *responseObject {
	o := &responseObject{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model,
		Output: []any{}, ParallelToolCalls: rr.ParallelToolCalls == nil || *rr.ParallelToolCalls, Store: store,
		Temperature: rr.Temperature, TopP: rr.TopP, Truncation: "disabled", Tools: rr.Tools, Metadata: rr.Metadata,
		Instructions: json.RawMessage("null"), Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: json.RawMessage(`"auto"`)}
	if len(rr.Instructions) > 0 {
		o.Instructions = rr.Instructions
	}
	if rr.Text != nil && len(rr.Text.Format) > 0 {
		o.Text = json.RawMessage(`{"format":` + string(rr.Text.Format) + `}`)
	}
	if len(rr.ToolChoice) > 0 {
		o.ToolChoice = rr.ToolChoice
	}
	if o.Tools == nil {
		o.Tools = []responseTool{}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if rr.MaxOutputTokens > 0 {
		o.MaxOutputTokens = &rr.MaxOutputTokens
	}
	if rr.PreviousResponseID != "" {
		o.PreviousResponseID = &rr.PreviousResponseID
	}
	if rr.User != "" {
		o.User = &rr.User
	}
	return o
}

// complete fills the response object from the run's outcome: the answer
// as one message item (its id msgID), then the client's function calls.
func (s *Server) complete(o *responseObject, resp *host.Response, msgID string, callIDs []string) {
	o.Model = resp.Model
	o.Status = "completed"
	if resp.FinishReason == openai.FinishReasonLength {
		o.Status, o.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
	}
	if resp.Answer != "" {
		o.Output = append(o.Output, messageItem{Type: "message", ID: msgID, Status: "completed", Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: resp.Answer, Annotations: []any{}}}})
	}
	for i, c := range resp.ClientCalls {
		o.Output = append(o.Output, functionCallItem{Type: "function_call", ID: callIDs[i], CallID: c.ID, Name: c.Function.Name,
			Arguments: c.Function.Arguments, Status: "completed"})
	}
	u := &responseUsage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	o.Usage = u
	o.Toolshed = s.trace(resp)
}

// responses runs the agent loop for one Responses API request.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var rr responsesRequest
	decodeErr := func(err error) Error { return decodeError(err, "a Responses API request", responsesDocs) }
	if !s.readRequest(w, r, &rr, decodeErr) {
		return
	}
	tenant := s.opts.Tenant(r)
	var prior []openai.ChatCompletionMessage
	if rr.PreviousResponseID != "" {
		if s.kept == nil {
			WriteError(w, http.StatusBadRequest, Error{Type: "invalid_request_error", Param: "previous_response_id", Code: "previous_response_not_served",
				Message: "previous_response_id is not served: this server keeps no responses (server.responses.keep is 0); send the whole conversation as input items, with store: false"})
			return
		}
		var ok bool
		if prior, ok = s.kept.get(tenant, rr.PreviousResponseID); !ok {
			WriteError(w, http.StatusBadRequest, Error{Type: "invalid_request_error", Param: "previous_response_id", Code: "previous_response_not_found",
				Message: fmt.Sprintf("previous response %q not found (never made, made with another API key, or past server.responses.keep_for)", rr.PreviousResponseID)})
			return
		}
	}
	req, convo, err := rr.chatRequest(prior)
	if err != nil {
		WriteError(w, http.StatusBadRequest, decodeErr(err))
		return
	}
	ctx, release, ok := s.admit(w, r, "response")
	if !ok {
		return
	}
	defer release()
	done := s.opts.Metrics.SessionStarted("responses")
	defer done()
	store := s.kept != nil && (rr.Store == nil || *rr.Store)
	id, start := newItemID("resp_"), time.Now()
	model := rr.Model
	if model == "" {
		model = s.host.Model()
	}
	obj := rr.skeleton(id, model, start.Unix(), store)
	msgID := newItemID("msg_")
	h := s.host.Tenant(tenant)
	var resp *host.Response
	if rr.Stream {
		resp, err = s.streamResponse(ctx, w, h, req, obj, msgID)
	} else {
		resp, err = h.RunRequest(ctx, req, nil)
		if errors.Is(err, host.ErrMaxRounds) {
			s.opts.Logger.Warn("response stopped at the round limit (agent.max_rounds)", "request_id", s.opts.RequestID(w), "id", id)
			err = nil
		}
		if err == nil {
			s.complete(obj, resp, msgID, callItemIDs(len(resp.ClientCalls)))
			WriteJSON(w, http.StatusOK, obj)
		} else {
			completionFailure(err).write(w)
		}
	}
	if err == nil && store {
		s.kept.put(tenant, id, append(convo, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant,
			Content: resp.Answer, ToolCalls: resp.ClientCalls}))
	}
	s.opts.Metrics.ObserveResponse(resp)
	attrs := []any{"request_id", s.opts.RequestID(w), "id", id, "stream", rr.Stream, "took", time.Since(start).Round(time.Millisecond)}
	if resp != nil {
		attrs = append(attrs, "model", resp.Model, "rounds", len(resp.Rounds), "discovered", resp.Discovered, "finish", resp.FinishReason)
	}
	if err != nil {
		s.opts.Logger.Warn("response failed", append(attrs, "error", err)...)
	} else {
		s.opts.Logger.Info("response", attrs...)
	}
}

func callItemIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = newItemID("fc_")
	}
	return out
}

// events writes the Responses API's server-sent events: "event: TYPE"
// and the event as data, numbered.
type events struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	seq     int
	started bool
	obj     *responseObject
}

// begin sends the headers, response.created and response.in_progress,
// once.
func (e *events) begin() {
	if e.started {
		return
	}
	e.started = true
	e.w.Header().Set("Content-Type", "text/event-stream")
	e.w.Header().Set("Cache-Control", "no-cache")
	e.w.Header().Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
	e.send("response.created", map[string]any{"response": e.obj})
	e.send("response.in_progress", map[string]any{"response": e.obj})
}

func (e *events) send(typ string, fields map[string]any) {
	e.begin()
	fields["type"], fields["sequence_number"] = typ, e.seq
	e.seq++
	b, _ := json.Marshal(fields)
	e.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, b)
	e.rc.Flush()
}

// comment keeps the stream alive while tools run (clients ignore it).
func (e *events) comment(text string) {
	e.begin()
	e.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	fmt.Fprintf(e.w, ": %s\n\n", text)
	e.rc.Flush()
}

// streamResponse runs the request with the answer streamed as the
// Responses API's events: the message item opened at the first text, its
// text deltas, SSE comments while tools run, then the item closed, the
// client's function calls, and response.completed (response.incomplete at
// a length limit). An error before anything was sent is an ordinary error
// response; after, an error event.
func (s *Server) streamResponse(ctx context.Context, w http.ResponseWriter, h *host.Host, req openai.ChatCompletionRequest, obj *responseObject, msgID string) (*host.Response, error) {
	e := &events{w: w, rc: http.NewResponseController(w), obj: obj}
	opened := false
	var text strings.Builder
	part := func(t string) map[string]any {
		return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
	}
	resp, err := h.RunRequest(ctx, req, func(ev host.Event) {
		switch ev.Kind {
		case host.EventText:
			if !opened {
				opened = true
				e.send("response.output_item.added", map[string]any{"output_index": 0,
					"item": messageItem{Type: "message", ID: msgID, Status: "in_progress", Role: "assistant", Content: []outputText{}}})
				e.send("response.content_part.added", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "part": part("")})
			}
			text.WriteString(ev.Text)
			e.send("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0,
				"delta": ev.Text, "logprobs": []any{}})
		case host.EventToolCall, host.EventToolResult:
			// The name is the model's: quoted, so it cannot end the comment.
			e.comment(string(ev.Kind) + " " + strconv.QuoteToASCII(ev.Call.Name))
		}
	})
	if errors.Is(err, host.ErrMaxRounds) {
		s.opts.Logger.Warn("response stopped at the round limit (agent.max_rounds)", "id", obj.ID)
		err = nil
	}
	if err != nil {
		f := completionFailure(err)
		if !e.started {
			f.write(w)
			return resp, err
		}
		e.send("error", map[string]any{"code": f.err.Code, "message": f.err.Message, "param": nullable(f.err.Param)})
		return resp, err
	}
	ids := callItemIDs(len(resp.ClientCalls))
	s.complete(obj, resp, msgID, ids)
	index := 0
	if opened {
		full := text.String()
		e.send("response.output_text.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "text": full, "logprobs": []any{}})
		e.send("response.content_part.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "part": part(full)})
		e.send("response.output_item.done", map[string]any{"output_index": 0, "item": obj.Output[0]})
		index = 1
	}
	for i, c := range resp.ClientCalls {
		item := functionCallItem{Type: "function_call", ID: ids[i], CallID: c.ID, Name: c.Function.Name, Status: "in_progress"}
		e.send("response.output_item.added", map[string]any{"output_index": index, "item": item})
		e.send("response.function_call_arguments.delta", map[string]any{"item_id": ids[i], "output_index": index, "delta": c.Function.Arguments})
		e.send("response.function_call_arguments.done", map[string]any{"item_id": ids[i], "output_index": index, "arguments": c.Function.Arguments})
		item.Arguments, item.Status = c.Function.Arguments, "completed"
		e.send("response.output_item.done", map[string]any{"output_index": index, "item": item})
		index++
	}
	final := "response.completed"
	if obj.Status == "incomplete" {
		final = "response.incomplete"
	}
	e.send(final, map[string]any{"response": obj})
	return resp, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
