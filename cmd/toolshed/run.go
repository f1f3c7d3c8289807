package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/catalog"
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

// agentFlagNames are the configuration flags run and chat take.
var agentFlagNames = []string{"plugins", "grants", "base-url", "model", "search-mode", "search-model",
	"max-rounds", "workspace", "skills", "shell", "no-time", "no-todo"}

// buildAgent loads the configuration and makes the agent host over a
// fixed catalog; close releases it. Only errors are logged, unless
// log.level is debug (or TOOLSHED_DEBUG=1).
func buildAgent(cc *cmdConfig, stderr io.Writer) (*agent, error) {
	l, err := cc.load()
	if err != nil {
		return nil, err
	}
	cfg := &l.Config
	logCfg := cfg.Log
	if logCfg.Level != "debug" {
		logCfg.Level = "error"
	}
	log := newConfigLogger(logCfg, stderr)
	snap, err := loadCatalog(cfg.Plugins.Dir, nil)
	if err != nil {
		return nil, err
	}
	for _, e := range snap.Errors {
		fmt.Fprintf(stderr, "toolshed: skipped %s\n", indent(e.Error()))
	}
	return newAgent(cfg, func() *catalog.Snapshot { return snap }, log, stderr, true, nil)
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	cc := addConfigFlags(fs, agentFlagNames...)
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
	ag, err := buildAgent(cc, stderr)
	if err != nil {
		return err
	}
	defer ag.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	resp, runErr := ag.host.Run(ctx, []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}})
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
	cc := addConfigFlags(fs, agentFlagNames...)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed chat [--plugins DIR] [--base-url URL] [--model M] [--search-mode MODE] [flags]\n\n"+
			"An interactive session: one request per line, the earlier ones as context; Ctrl-D leaves.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	ag, err := buildAgent(cc, stderr)
	if err != nil {
		return err
	}
	defer ag.close()
	h := ag.host
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

// artifacts lists where the files plugins stored during a request are on
// disk.
func artifacts(resp *host.Response) []string {
	var out []string
	for _, r := range resp.Rounds {
		for _, c := range r.ToolCalls {
			for _, a := range c.Artifacts {
				out = append(out, a.Path)
			}
		}
	}
	return out
}
