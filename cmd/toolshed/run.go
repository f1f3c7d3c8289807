package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

type runJSON struct {
	Answer     string      `json:"answer"`
	Discovered []string    `json:"discovered"`
	Rounds     []roundJSON `json:"rounds"`
	Error      string      `json:"error,omitempty"`
}

type roundJSON struct {
	Tools          []string       `json:"tools"`
	ToolCalls      []toolCallJSON `json:"tool_calls"`
	ToolTokens     int            `json:"tool_tokens"`
	AllToolsTokens int            `json:"all_tools_tokens"`
}

type toolCallJSON struct {
	Name      string             `json:"name"`
	Arguments string             `json:"arguments"`
	IsError   bool               `json:"is_error"`
	Search    *host.SearchRecord `json:"search,omitempty"`
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	dir := fs.String("plugins", defaultPluginDir(), "plugin directory")
	baseURL := fs.String("base-url", os.Getenv("OPENAI_BASE_URL"), "OpenAI-compatible API base URL (default $OPENAI_BASE_URL)")
	model := fs.String("model", envOr("TOOLSHED_MODEL", "gpt-4o-mini"), "model name (default $TOOLSHED_MODEL or gpt-4o-mini)")
	mode := fs.String("search-mode", "hybrid", "tool_search mode: keyword, llm or hybrid")
	grantsPath := fs.String("grants", "", "operator grants and caps `FILE` for plugins (docs/RUNTIME.md)")
	asJSON := fs.Bool("json", false, "print the answer, discoveries and per-round telemetry as JSON")
	maxRounds := fs.Int("max-rounds", 16, "most model rounds for the request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed run [--plugins DIR] [--base-url URL] [--model M] [--search-mode keyword|llm|hybrid] [--json] PROMPT")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(pos, " "))
	if prompt == "" {
		fs.Usage()
		return errUsage
	}
	switch host.Mode(*mode) {
	case host.ModeKeyword, host.ModeLLM, host.ModeHybrid:
	default:
		return fmt.Errorf("--search-mode %q: want keyword, llm or hybrid", *mode)
	}
	if *baseURL == "" {
		return errors.New("no model endpoint: set OPENAI_BASE_URL (or --base-url) to an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")
	}
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = strings.TrimRight(*baseURL, "/")
	snap, err := catalog.Load(*dir, nil)
	if err != nil {
		return err
	}
	for _, e := range snap.Errors {
		fmt.Fprintf(stderr, "toolshed: skipped %s\n", indent(e.Error()))
	}
	wopts := &wasm.Options{Logger: newLogger(stderr)}
	if *grantsPath != "" {
		if wopts.Caps, wopts.Grants, err = wasm.LoadGrants(*grantsPath); err != nil {
			return err
		}
	}
	rt, err := wasm.New(wopts)
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())
	h, err := host.New(host.Options{
		Client:    openai.NewClientWithConfig(cfg),
		Model:     *model,
		Tools:     []host.GoTool{builtin.CurrentTime(nil)},
		Catalog:   func() *catalog.Snapshot { return snap },
		Runtime:   rt,
		Search:    host.SearchOptions{Mode: host.Mode(*mode)},
		MaxRounds: *maxRounds,
		Logger:    newLogger(stderr),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	resp, runErr := h.Run(ctx, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
	if *asJSON {
		out := runJSON{Discovered: []string{}, Rounds: []roundJSON{}}
		if resp != nil {
			out.Answer = resp.Answer
			out.Discovered = append(out.Discovered, resp.Discovered...)
			for _, r := range resp.Rounds {
				rj := roundJSON{Tools: r.Tools, ToolCalls: []toolCallJSON{}, ToolTokens: r.ToolTokens, AllToolsTokens: r.AllToolsTokens}
				for _, c := range r.ToolCalls {
					rj.ToolCalls = append(rj.ToolCalls, toolCallJSON{Name: c.Name, Arguments: c.Arguments, IsError: c.IsError, Search: c.Search})
				}
				out.Rounds = append(out.Rounds, rj)
			}
		}
		if runErr != nil {
			out.Error = runErr.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if resp != nil && resp.Answer != "" {
		fmt.Fprintln(stdout, resp.Answer)
	}
	return runErr
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
