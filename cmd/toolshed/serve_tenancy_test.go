package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/internal/scripted"
)

// TestServeKeysKeepApart: with two API keys, what key A's requests hold
// is not key B's to use, through toolshed serve's wiring: A's
// continuation id restores nothing for B (and everything for A), B naming
// A's MCP session gets 404, and A's session goes on.
func TestServeKeysKeepApart(t *testing.T) {
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	model := &scripted.Model{}
	s := startServe(t, model, map[string]string{"server.api_keys": keyA + "," + keyB})

	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "get_location",
		Description: "The user's city", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	ask := user(`use slugify with {"text":"A_B"} to url-slug then get_location with {}`)
	resp, err := s.client(keyA).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: ask, Tools: tools})
	if err != nil || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	msg := resp.Choices[0].Message
	follow := openai.ChatCompletionRequest{Tools: tools, Messages: append(slices.Clone(ask), msg,
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: msg.ToolCalls[0].ID, Content: "Paris"})}
	for _, c := range []struct {
		key     string
		restore bool
	}{{keyB, false}, {keyA, true}} {
		before := len(model.Requests())
		if _, err := s.client(c.key).CreateChatCompletion(context.Background(), follow); err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(scripted.ToolNames(model.Requests()[before]), "slugify"); got != c.restore {
			t.Fatalf("key %s: restored slugify = %v, want %v", c.key[:5], got, c.restore)
		}
	}

	mcp := func(key, sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	init, _ := mcp(keyA, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", init.StatusCode)
	}
	mcp(keyA, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r, body := mcp(keyB, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.StatusCode != 404 || !strings.Contains(body, "-32001") {
		t.Fatalf("key B with key A's session: %d %s", r.StatusCode, body)
	}
	if r, body := mcp(keyA, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); r.StatusCode != 200 || !strings.Contains(body, "tool_search") {
		t.Fatalf("key A after B's attempt: %d %s", r.StatusCode, body)
	}
	if strings.Contains(s.logs.String(), sid) {
		t.Fatal("the MCP session id is in serve's log")
	}
}
