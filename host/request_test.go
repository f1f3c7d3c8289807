package host_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

func clientTool(name string) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name,
		Description: "runs on the client", Parameters: map[string]any{"type": "object"}}}
}

// TestClientTools: tools the caller sends are offered every round and
// their calls end the request, returned to the caller unrun.
func TestClientTools(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	req := openai.ChatCompletionRequest{Model: "scripted-large", Temperature: 0.25,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: `use get_location with {"city":"x"} to where`}},
		Tools:    []openai.Tool{clientTool("get_location")}}
	resp, err := h.RunRequest(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != openai.FinishReasonToolCalls || len(resp.ClientCalls) != 1 ||
		resp.ClientCalls[0].Function.Name != "get_location" || resp.ClientCalls[0].Function.Arguments != `{"city":"x"}` {
		t.Fatalf("response %+v", resp)
	}
	sent := model.Requests()
	if len(sent) != 1 || sent[0].Model != "scripted-large" || sent[0].Temperature != 0.25 {
		t.Fatalf("upstream got %+v", sent)
	}
	if got := model.ToolsSent()[0]; !reflect.DeepEqual(got, []string{"get_time", "get_location", "tool_search"}) {
		t.Fatalf("tools sent %v", got)
	}
	if resp.Usage.TotalTokens == 0 || resp.Model != "scripted-large" {
		t.Fatalf("usage %+v model %q", resp.Usage, resp.Model)
	}

	// The client answers in a second request; the model finishes.
	msgs := append(resp.Messages[1:], openai.ChatCompletionMessage{Role: "tool", ToolCallID: "c1", Name: "get_location", Content: "Paris"})
	resp, err = h.RunRequest(context.Background(), openai.ChatCompletionRequest{Messages: msgs, Tools: req.Tools}, nil)
	if err != nil || resp.Answer != "answer: Paris" || resp.FinishReason != openai.FinishReasonStop {
		t.Fatalf("second request: %+v %v", resp, err)
	}

	// A deferred tool and a client tool in one request: the server tool
	// runs here, the client's comes back.
	resp, err = h.RunRequest(context.Background(), openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: `use slugify with {"text":"A_B"} to url-slug`}},
		Tools:    []openai.Tool{clientTool("get_location")}}, nil)
	if err != nil || resp.Answer != "answer: a-b" || len(resp.ClientCalls) != 0 {
		t.Fatalf("server-side request: %+v %v", resp, err)
	}
	if c := resp.Rounds[1].ToolCalls[0]; c.Plugin != "textkit" || c.Name != "slugify" {
		t.Fatalf("call record %+v", c)
	}
}

func TestRunRequestRefusesWhatItCannotDo(t *testing.T) {
	h, _ := newHost(t, &scripted{}, host.Options{})
	user := []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		req  openai.ChatCompletionRequest
		want string
	}{
		{openai.ChatCompletionRequest{}, "messages is empty"},
		{openai.ChatCompletionRequest{Messages: user, N: 2}, "n must be 1"},
		{openai.ChatCompletionRequest{Messages: user, ToolChoice: "required"}, `tool_choice "required"`},
		{openai.ChatCompletionRequest{Messages: user, Tools: []openai.Tool{clientTool("tool_search")}}, "server tool"},
		{openai.ChatCompletionRequest{Messages: user, Tools: []openai.Tool{clientTool("slugify")}}, "server tool"},
		{openai.ChatCompletionRequest{Messages: user, Tools: []openai.Tool{clientTool("a"), clientTool("a")}}, "twice"},
		{openai.ChatCompletionRequest{Messages: user, Tools: []openai.Tool{{Type: "function"}}}, "function with a name"},
	} {
		_, err := h.RunRequest(context.Background(), tc.req, nil)
		if !errors.Is(err, host.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}

// TestSessionDrivenSearch: a front end drives a Session itself and lets
// another model choose (an MCP client's, through sampling).
func TestSessionDrivenSearch(t *testing.T) {
	h, _ := newHost(t, &scripted{}, host.Options{Search: host.SearchOptions{Mode: host.ModeLLM}})
	s := h.NewSession()
	defer s.Close()
	p, _, _ := s.BeginSearch(`{"query":"make a url slug"}`, true)
	if p == nil || !strings.Contains(p.Prompt, "slugify:") || p.System == "" {
		t.Fatalf("pending %+v", p)
	}
	// Beginning again changes nothing; completing applies.
	if p2, _, _ := s.BeginSearch(`{"query":"make a url slug"}`, true); p2 == nil || p2.Prompt != p.Prompt {
		t.Fatal("a second begin differs")
	}
	res, rec := p.Complete(`{"tools":["slugify","nope"]}`, nil)
	if rec.Path != "llm" || !reflect.DeepEqual(rec.Found, []string{"slugify"}) || res.IsError {
		t.Fatalf("complete: %+v %+v", res, rec)
	}
	if got := s.Discovered(); !reflect.DeepEqual(got, []string{"slugify"}) {
		t.Fatalf("discovered %v", got)
	}
	res, _ = s.Call(context.Background(), "slugify", `{"text":"A_B"}`)
	if res.IsError || res.Content != "a-b" {
		t.Fatalf("call: %+v", res)
	}
	// Without a model to ask, keyword hits stand.
	s2 := h.NewSession()
	defer s2.Close()
	p, _, rec = s2.BeginSearch(`{"query":"url slug"}`, false)
	if p != nil || rec.Path != "no-llm" || !reflect.DeepEqual(rec.Found, []string{"slugify"}) {
		t.Fatalf("no-llm: %+v %+v", p, rec)
	}
	if res, _ := s2.Call(context.Background(), "textStats", `{"text":"x"}`); !res.IsError {
		t.Fatal("an undiscovered tool ran")
	}
	// A front end's session is not held to the agent loop's search budget.
	for i := 0; i < 12; i++ {
		if _, rec := s2.Call(context.Background(), "tool_search", fmt.Sprintf(`{"query":"count words %d"}`, i)); rec.Path == "budget" {
			t.Fatalf("search %d refused for budget", i+1)
		}
	}
}
