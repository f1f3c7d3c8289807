package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

type runJSON struct {
	Answer     string      `json:"answer"`
	Discovered []string    `json:"discovered"`
	Artifacts  []string    `json:"artifacts"`
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
	Name       string             `json:"name"`
	Arguments  string             `json:"arguments"`
	IsError    bool               `json:"is_error"`
	Search     *host.SearchRecord `json:"search,omitempty"`
	Structured json.RawMessage    `json:"structured,omitempty"`
}

// agentFlags are the flags run and chat share.
type agentFlags struct {
	dir, baseURL, model, mode, grants *string
	searchModel                       *string
	workspace, skills                 *string
	shell, noTime, noTodo             *bool
	maxRounds                         *int
}

func addAgentFlags(fs *flag.FlagSet) *agentFlags {
	return &agentFlags{
		dir:         fs.String("plugins", defaultPluginDir(), "plugin directory"),
		baseURL:     fs.String("base-url", os.Getenv("OPENAI_BASE_URL"), "OpenAI-compatible API base URL (default $OPENAI_BASE_URL)"),
		model:       fs.String("model", envOr("TOOLSHED_MODEL", "gpt-4o-mini"), "model name (default $TOOLSHED_MODEL or gpt-4o-mini)"),
		mode:        fs.String("search-mode", "hybrid", "tool_search mode: keyword, llm or hybrid"),
		searchModel: fs.String("search-model", "", "model that chooses tools in llm/hybrid search (default: --model)"),
		grants:      fs.String("grants", "", "operator grants and caps `FILE` for plugins (docs/RUNTIME.md)"),
		maxRounds:   fs.Int("max-rounds", 16, "most model rounds per request"),
		workspace:   fs.String("workspace", "", "`DIR` the file tools (read_file, list_dir, grep) may read; none without it"),
		skills:      fs.String("skills", "", "`DIR` of skill files for the skill tool; none without it"),
		shell:       fs.Bool("shell", false, "enable the shell tool in the workspace (NOT sandboxed: it runs with your rights)"),
		noTime:      fs.Bool("no-time", false, "turn off the current_time tool"),
		noTodo:      fs.Bool("no-todo", false, "turn off the todo_write tool"),
	}
}

// tools are the always-on built-ins the flags enable, in a fixed order.
func (f *agentFlags) tools() ([]host.GoTool, error) {
	var out []host.GoTool
	if !*f.noTime {
		out = append(out, builtin.CurrentTime(nil))
	}
	if !*f.noTodo {
		out = append(out, builtin.Todo())
	}
	if *f.workspace != "" {
		ws, err := builtin.Workspace(*f.workspace)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	if *f.skills != "" {
		sk, err := builtin.Skills(*f.skills)
		if err != nil {
			return nil, err
		}
		out = append(out, sk)
	}
	if *f.shell {
		if *f.workspace == "" {
			return nil, errors.New("--shell needs --workspace: the directory the commands run in")
		}
		out = append(out, builtin.Shell(*f.workspace, 0, 0))
	}
	return out, nil
}

// build makes the agent host; close releases the plugin runtime.
func (f *agentFlags) build(stderr io.Writer) (h *host.Host, closeFn func(), err error) {
	switch host.Mode(*f.mode) {
	case host.ModeKeyword, host.ModeLLM, host.ModeHybrid:
	default:
		return nil, nil, fmt.Errorf("--search-mode %q: want keyword, llm or hybrid", *f.mode)
	}
	if *f.baseURL == "" {
		return nil, nil, errors.New("no model endpoint: set OPENAI_BASE_URL (or --base-url) to an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")
	}
	tools, err := f.tools()
	if err != nil {
		return nil, nil, err
	}
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = strings.TrimRight(*f.baseURL, "/")
	snap, err := catalog.Load(*f.dir, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range snap.Errors {
		fmt.Fprintf(stderr, "toolshed: skipped %s\n", indent(e.Error()))
	}
	op, err := loadOperator(*f.dir, *f.grants, *f.dir == defaultPluginDir())
	if err != nil {
		return nil, nil, err
	}
	rt, err := wasm.New(op.options("", 0, stderr))
	if err != nil {
		op.close()
		return nil, nil, err
	}
	h, err = host.New(host.Options{
		Client:    openai.NewClientWithConfig(cfg),
		Model:     *f.model,
		Tools:     tools,
		Catalog:   func() *catalog.Snapshot { return snap },
		Runtime:   rt,
		Search:    host.SearchOptions{Mode: host.Mode(*f.mode), LLMModel: *f.searchModel},
		MaxRounds: *f.maxRounds,
		Logger:    newLogger(stderr),
	})
	if err != nil {
		rt.Close(context.Background())
		op.close()
		return nil, nil, err
	}
	return h, func() { rt.Close(context.Background()); op.close() }, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	af := addAgentFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer, discoveries and per-round telemetry as JSON")
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
	h, closeFn, err := af.build(stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	resp, runErr := h.Run(ctx, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
	if *asJSON {
		out := runJSON{Discovered: []string{}, Artifacts: []string{}, Rounds: []roundJSON{}}
		if resp != nil {
			out.Answer = resp.Answer
			out.Artifacts = append(out.Artifacts, artifacts(resp)...)
			out.Discovered = append(out.Discovered, resp.Discovered...)
			for _, r := range resp.Rounds {
				rj := roundJSON{Tools: r.Tools, ToolCalls: []toolCallJSON{}, ToolTokens: r.ToolTokens, AllToolsTokens: r.AllToolsTokens}
				for _, c := range r.ToolCalls {
					rj.ToolCalls = append(rj.ToolCalls, toolCallJSON{Name: c.Name, Arguments: c.Arguments, IsError: c.IsError, Search: c.Search, Structured: c.Structured})
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
	if resp != nil && !*asJSON {
		for _, a := range artifacts(resp) {
			fmt.Fprintf(stdout, "artifact: %s\n", a)
		}
	}
	return runErr
}

// cmdChat is an interactive session: each line typed is one request (its
// own tool discoveries), with the earlier questions and answers as context.
func cmdChat(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("chat", stderr)
	af := addAgentFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: toolshed chat [--plugins DIR] [--base-url URL] [--model M] [--search-mode MODE]")
		return errUsage
	}
	h, closeFn, err := af.build(stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	fmt.Fprintln(stdout, "Toolshed chat: one request per line; Ctrl-D to leave.")
	var history []openai.ChatCompletionMessage
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for {
		fmt.Fprint(stdout, "> ")
		if !sc.Scan() {
			fmt.Fprintln(stdout)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		msgs := append(append([]openai.ChatCompletionMessage(nil), history...), openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: line})
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		resp, err := h.RunStream(ctx, msgs, func(e host.Event) {
			switch e.Kind {
			case host.EventText:
				fmt.Fprint(stdout, e.Text)
			case host.EventToolCall:
				fmt.Fprintf(stdout, "  [%s %s]\n", e.Call.Name, e.Call.Arguments)
			case host.EventToolResult:
				mark := "ok"
				if e.Call.IsError {
					mark = "error"
				}
				fmt.Fprintf(stdout, "  [%s: %s, %s]\n", e.Call.Name, mark, e.Call.Duration.Round(time.Millisecond))
			}
		})
		stop()
		fmt.Fprintln(stdout)
		if err != nil {
			fmt.Fprintln(stderr, "toolshed:", err)
			continue
		}
		if len(resp.Discovered) > 0 {
			fmt.Fprintf(stdout, "  (tools found this turn: %s)\n", strings.Join(resp.Discovered, ", "))
		}
		history = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: resp.Answer})
	}
}

// artifacts lists the files plugins stored during a request (results with
// an "artifact" and a "path").
func artifacts(resp *host.Response) []string {
	var out []string
	for _, r := range resp.Rounds {
		for _, c := range r.ToolCalls {
			var a struct {
				Artifact string `json:"artifact"`
				Path     string `json:"path"`
			}
			if len(c.Structured) > 0 && json.Unmarshal(c.Structured, &a) == nil && a.Artifact != "" && a.Path != "" {
				out = append(out, a.Path)
			}
		}
	}
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
