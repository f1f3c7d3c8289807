package openaiapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/openaiapi"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// responsesServer serves the front end over textkit and the scripted
// model; the tenant is the Authorization header.
func responsesServer(t *testing.T, keep int) (string, *scripted.Model) {
	t.Helper()
	model := &scripted.Model{}
	up := httptest.NewServer(model)
	t.Cleanup(up.Close)
	snap, err := catalog.Load(wasmbuild.Bundled(t, "../..", "textkit"), nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	rt, err := wasm.New(&wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = up.URL + "/v1"
	h, err := host.New(host.Options{Upstream: &host.Upstream{BaseURL: up.URL + "/v1"}, Model: "scripted", Runtime: rt,
		Catalog: func() *catalog.Snapshot { return snap }, Search: host.SearchOptions{Mode: host.ModeKeyword}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openaiapi.New(h, &openaiapi.Options{Upstream: openai.NewClientWithConfig(cfg), KeepResponses: keep,
		Tenant: func(r *http.Request) string { return r.Header.Get("Authorization") }}))
	t.Cleanup(srv.Close)
	return srv.URL, model
}

type response struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
	Object   string            `json:"object"`
	Status   string            `json:"status"`
	Output   []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		CallID  string `json:"call_id"`
		Name    string `json:"name"`
		Args    string `json:"arguments"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Store bool `json:"store"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (r response) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func postResponses(t *testing.T, url, key string, body any) (int, response, *http.Response) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out response
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, out, resp
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out, resp
}

var locationTool = map[string]any{"type": "function", "name": "get_location", "description": "The user's city",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}}}

// TestResponsesPlain: text input runs the agent loop (tool_search,
// slugify) and answers with a message item, usage and status.
func TestResponsesPlain(t *testing.T) {
	url, model := responsesServer(t, 0)
	status, r, _ := postResponses(t, url, "k", map[string]any{"model": "scripted", "instructions": "Be brief.",
		"input": `use slugify with {"text":"A_B"} to url-slug`, "metadata": map[string]string{"ticket": "T-1"}})
	if status != 200 || r.Object != "response" || r.Status != "completed" || !strings.HasPrefix(r.ID, "resp_") || r.text() != "answer: a-b" {
		t.Fatalf("%d %+v", status, r)
	}
	if r.Usage == nil || r.Usage.InputTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Store || r.Metadata["ticket"] != "T-1" {
		t.Fatalf("usage %+v store %v", r.Usage, r.Store)
	}
	if body := string(model.Bodies()[0]); strings.Contains(body, "parallel_tool_calls") || strings.Contains(body, "metadata") {
		t.Fatalf("upstream got fields the request did not set for it: %s", body)
	}
	first := model.Requests()[0]
	if first.Messages[1].Role != "system" || first.Messages[1].Content != "Be brief." || first.Messages[2].Role != "user" {
		t.Fatalf("upstream messages %+v", first.Messages)
	}
}

// TestResponsesClientToolStoreFalse: a call to the client's function tool
// ends the response with a function_call item; the client sends the items
// back (store: false) with the arguments re-serialised and its output, and
// the discovered slugify comes back with them.
func TestResponsesClientToolStoreFalse(t *testing.T) {
	url, model := responsesServer(t, 0)
	ask := `use slugify with {"text":"A_B"} to url-slug then get_location with {"who":"me"}`
	status, r, _ := postResponses(t, url, "k", map[string]any{"input": ask, "tools": []any{locationTool}, "store": false})
	if status != 200 || len(r.Output) == 0 {
		t.Fatalf("%d %+v", status, r)
	}
	call := r.Output[len(r.Output)-1]
	if call.Type != "function_call" || call.Name != "get_location" || call.Args != `{"who":"me"}` || !strings.HasPrefix(call.ID, "fc_") || call.CallID == "" {
		t.Fatalf("output %+v", r.Output)
	}
	before := len(model.Requests())
	items := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": ask}}},
		map[string]any{"type": "function_call", "id": call.ID, "call_id": call.CallID, "name": "get_location", "arguments": `{"who": "me"}`, "status": "completed"},
		map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": "Paris"}}
	status, r, _ = postResponses(t, url, "k", map[string]any{"input": items, "tools": []any{locationTool}, "store": false})
	if status != 200 || r.text() != "answer: Paris" {
		t.Fatalf("follow-up: %d %+v", status, r)
	}
	if names := scripted.ToolNames(model.Requests()[before]); !slices.Contains(names, "slugify") {
		t.Fatalf("the follow-up lost slugify: %v", names)
	}
	// Another key sending the same items: nothing restored.
	before = len(model.Requests())
	if status, _, _ = postResponses(t, url, "other", map[string]any{"input": items, "tools": []any{locationTool}, "store": false}); status != 200 {
		t.Fatal(status)
	}
	if names := scripted.ToolNames(model.Requests()[before]); slices.Contains(names, "slugify") {
		t.Fatalf("another key's replay restored slugify: %v", names)
	}
}

// TestResponsesPreviousResponseID: where the server keeps responses, the
// follow-up sends only the function_call_output and previous_response_id;
// another key cannot continue it; where it keeps none, a clear 400.
func TestResponsesPreviousResponseID(t *testing.T) {
	url, model := responsesServer(t, 16)
	ask := `use slugify with {"text":"A_B"} to url-slug then get_location with {"who":"me"}`
	status, r, _ := postResponses(t, url, "k", map[string]any{"input": ask, "tools": []any{locationTool}})
	if status != 200 || !r.Store {
		t.Fatalf("%d %+v", status, r)
	}
	call := r.Output[len(r.Output)-1]
	out := []any{map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": "Paris"}}
	before := len(model.Requests())
	status, r2, _ := postResponses(t, url, "k", map[string]any{"input": out, "tools": []any{locationTool}, "previous_response_id": r.ID})
	if status != 200 || r2.text() != "answer: Paris" {
		t.Fatalf("follow-up: %d %+v", status, r2)
	}
	if names := scripted.ToolNames(model.Requests()[before]); !slices.Contains(names, "slugify") {
		t.Fatalf("the follow-up lost slugify: %v", names)
	}
	status, e, _ := postResponses(t, url, "other", map[string]any{"input": out, "previous_response_id": r.ID})
	if status != 400 || e.Error == nil || *e.Error.Param != "previous_response_id" || *e.Error.Code != "previous_response_not_found" {
		t.Fatalf("another key: %d %+v", status, e.Error)
	}

	url0, _ := responsesServer(t, 0)
	status, e, _ = postResponses(t, url0, "k", map[string]any{"input": "hi", "previous_response_id": "resp_x"})
	if status != 400 || e.Error == nil || !strings.Contains(e.Error.Message, "keeps no responses") {
		t.Fatalf("no keeping: %d %+v", status, e.Error)
	}
}

// sseEvent is one event of a Responses stream.
type sseEvent struct {
	name string
	data map[string]any
}

func readEvents(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("event %q: %v", d, err)
			}
			if m["type"] != name {
				t.Fatalf("event %q carries type %v", name, m["type"])
			}
			out = append(out, sseEvent{name, m})
		}
	}
	return out
}

// TestResponsesStream: the Responses event types in order, numbered; the
// deltas add up to the final text; a client call streams as a
// function_call item.
func TestResponsesStream(t *testing.T) {
	url, _ := responsesServer(t, 0)
	b, _ := json.Marshal(map[string]any{"stream": true, "input": `use slugify with {"text":"A_B"} to url-slug then get_location with {"who":"me"}`,
		"tools": []any{locationTool}})
	req, _ := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := readEvents(t, resp)
	var names []string
	for i, e := range evs {
		names = append(names, e.name)
		if e.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d numbered %v", i, e.data["sequence_number"])
		}
	}
	got := strings.Join(names, " ")
	want := "response.created response.in_progress response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.done response.output_item.done response.completed"
	if got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	final := evs[len(evs)-1].data["response"].(map[string]any)
	item := final["output"].([]any)[0].(map[string]any)
	if final["status"] != "completed" || item["type"] != "function_call" || item["arguments"] != `{"who":"me"}` {
		t.Fatalf("final %+v", final)
	}

	// A text answer: deltas, then the item closed.
	b, _ = json.Marshal(map[string]any{"stream": true, "input": `use slugify with {"text":"A_B"} to url-slug`})
	resp, err = http.Post(url+"/v1/responses", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs = readEvents(t, resp)
	var text strings.Builder
	names = nil
	for _, e := range evs {
		if e.name == "response.output_text.delta" {
			text.WriteString(e.data["delta"].(string))
		} else {
			names = append(names, e.name)
		}
	}
	want = "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(names, " "); got != want || text.String() != "answer: a-b" {
		t.Fatalf("events %s, text %q", got, text.String())
	}
}

// TestResponsesRefusals: what is not served is a 400 in OpenAI's error
// shape naming the field.
func TestResponsesRefusals(t *testing.T) {
	url, model := responsesServer(t, 0)
	for _, tc := range []struct {
		body  any
		param string
		says  string
	}{
		{map[string]any{"input": "hi", "tools": []any{map[string]any{"type": "web_search"}}}, "tools[0]", "hosted tool"},
		{map[string]any{"input": "hi", "tools": []any{map[string]any{"type": "file_search", "vector_store_ids": []string{"x"}}}}, "tools[0]", "hosted tool"},
		{map[string]any{"input": "hi", "background": true}, "background", "background mode"},
		{map[string]any{"input": "hi", "conversation": "conv_1"}, "conversation", "conversations"},
		{map[string]any{"input": "hi", "tool_choice": "required"}, "tool_choice", "tool_choice"},
		{map[string]any{"input": "hi", "tool_choice": map[string]any{"type": "web_search_preview"}}, "tool_choice", "not served"},
		{map[string]any{"input": []any{map[string]any{"type": "web_search_call", "id": "ws_1"}}}, "input[0]", "not served"},
		{map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "msg_1"}}}, "input[0]", "item references"},
		{map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_file", "file_id": "f"}}}}}, "input[0].content[0]", "input_file"},
		{map[string]any{"input": []any{map[string]any{"role": "robot", "content": "hi"}}}, "input[0].role", "role"},
		{map[string]any{"input": []any{map[string]any{"type": "function_call_output", "output": "x"}}}, "input[0]", "call_id"},
		{map[string]any{"input": 42}, "input", "string or a list"},
		{map[string]any{"input": []any{}}, "input", "empty"},
		{map[string]any{"input": "hi", "text": map[string]any{"format": map[string]any{"type": "yaml"}}}, "text.format.type", "yaml"},
	} {
		status, r, _ := postResponses(t, url, "k", tc.body)
		if status != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != tc.param || !strings.Contains(r.Error.Message, tc.says) ||
			r.Error.Type != "invalid_request_error" {
			b, _ := json.Marshal(tc.body)
			t.Errorf("%s: %d %+v", b, status, r.Error)
		}
	}
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(`{"input": "hi",`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad JSON: %d", resp.StatusCode)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("%d refused requests reached the model", n)
	}
}
