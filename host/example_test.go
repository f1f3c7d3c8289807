package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

// Embedding: always-on Go tools, deferred tools from a plugin directory,
// any OpenAI-compatible endpoint.
func ExampleNew() {
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	h, err := host.New(host.Options{
		Client:    openai.NewClientWithConfig(cfg),
		Model:     "gpt-4o-mini",
		PluginDir: "plugin-manifests",
		Tools: []host.GoTool{{
			Name:        "company_name",
			Description: "The name of the company the user works for.",
			Call: func(context.Context, json.RawMessage) (host.Result, error) {
				return host.Result{Content: "Example Corp"}, nil
			},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(context.Background())
	resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: "user", Content: "画出上个月的销售趋势"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Answer, resp.Discovered)
}
