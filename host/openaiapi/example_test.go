package openaiapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/host/openaiapi"
	"github.com/toolshed/toolshed/internal/scripted"
)

// An embedder mounts the OpenAI-compatible endpoint and MCP on its own
// mux, beside its own routes, over one host.Host.
func Example_mount() {
	upstream := httptest.NewServer(&scripted.Model{}) // any OpenAI-compatible API
	defer upstream.Close()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = upstream.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	h, err := host.New(host.Options{Client: client, Model: "scripted", Tools: []host.GoTool{{
		Name:        "company_name",
		Description: "The name of the company the user works for.",
		Call: func(context.Context, json.RawMessage) (host.Result, error) {
			return host.Result{Content: "Example Corp"}, nil
		},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(context.Background())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	openaiapi.New(h, &openaiapi.Options{Upstream: client}).Register(mux)
	mux.Handle("/mcp", mcpserver.New(h, nil).Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// An OpenAI client asks the agent.
	ccfg := openai.DefaultConfig("")
	ccfg.BaseURL = srv.URL + "/v1"
	resp, err := openai.NewClientWithConfig(ccfg).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "use company_name with {} to name the company"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)

	// An MCP client lists the tools.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	// Output:
	// answer: Example Corp
	// company_name
	// tool_search
}
