package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/embed"
)

// configFlag is a command-line flag that sets a configuration key.
type configFlag struct {
	key    string
	usage  string
	invert bool // a --no-X flag for a boolean key
}

// configFlags are the flags that map to configuration keys; commands pick
// the ones they take.
var configFlags = map[string]configFlag{
	"plugins":      {key: "plugins.dir", usage: pluginDirUsage},
	"grants":       {key: "plugins.grants", usage: "operator grants, caps and databases `FILE` (docs/RUNTIME.md)"},
	"watch":        {key: "plugins.watch", usage: "reload the plugin directory when it changes"},
	"poll":         {key: "plugins.poll", usage: "also rescan the plugin directory this often (file systems without events); 0: never"},
	"base-url":     {key: "model.base_url", usage: "upstream OpenAI-compatible API base URL"},
	"model":        {key: "model.name", usage: "model name"},
	"search-mode":  {key: "search.mode", usage: "tool_search mode: keyword, llm or hybrid"},
	"search-model": {key: "search.model", usage: "model that chooses tools in llm/hybrid search (default: the model)"},
	"max-rounds":   {key: "agent.max_rounds", usage: "most model rounds per request"},
	"workspace":    {key: "agent.workspace", usage: "`DIR` the file tools (read_file, list_dir, grep) may read; none without it"},
	"skills":       {key: "agent.skills", usage: "`DIR` of skill files for the skill tool; none without it"},
	"shell":        {key: "agent.shell", usage: "enable the shell tool in the workspace (NOT sandboxed: it runs with your rights)"},
	"no-time":      {key: "agent.time", invert: true, usage: "turn off the current_time tool"},
	"no-todo":      {key: "agent.todo", invert: true, usage: "turn off the todo_write tool"},
	"addr":         {key: "server.addr", usage: "address to listen on"},
	"open":         {key: "server.allow_open", usage: "allow listening beyond loopback without API keys"},
	"log-format":   {key: "log.format", usage: "log format: text or json"},
	"log-level":    {key: "log.level", usage: "log level: debug, info, warn or error"},
}

// cmdConfig is the config sources of one command: --config and the
// configuration flags it takes.
type cmdConfig struct {
	fs   *flag.FlagSet
	file *string
	// keepDir leaves plugins.dir as configured ("config print"); other
	// commands resolve "" to the bundled catalog (pluginDir).
	keepDir bool
}

// addConfigFlags registers --config and the named configuration flags,
// showing the built-in defaults.
func addConfigFlags(fs *flag.FlagSet, names ...string) *cmdConfig {
	c := &cmdConfig{fs: fs}
	c.file = fs.String("config", "", "configuration `FILE` (default $TOOLSHED_CONFIG, else ./toolshed.yaml if present)")
	defaults := config.Defaults()
	for _, n := range names {
		cf, ok := configFlags[n]
		if !ok {
			panic("no configuration flag " + n)
		}
		def := fmt.Sprint(defaults[cf.key])
		switch v := defaults[cf.key].(type) {
		case bool:
			if cf.invert {
				fs.Bool(n, false, cf.usage)
			} else {
				fs.Bool(n, v, cf.usage)
			}
		default:
			fs.String(n, def, cf.usage)
		}
	}
	return c
}

// loadCommand parses a command that takes no positional arguments and
// loads its configuration; usage is the first line of its help.
func loadCommand(name, usage string, flagNames []string, args []string, stderr io.Writer) (*config.Loaded, error) {
	fs := newFlags(name, stderr)
	cc := addConfigFlags(fs, flagNames...)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		fs.Usage()
		return nil, errUsage
	}
	return cc.load()
}

// load reads the configuration: defaults < file < environment < the flags
// given on this command line.
func (c *cmdConfig) load() (*config.Loaded, error) {
	flags := map[string]string{}
	var ferr error
	c.fs.Visit(func(f *flag.Flag) {
		cf, ok := configFlags[f.Name]
		if !ok {
			return
		}
		v := f.Value.String()
		if cf.invert {
			b, err := strconv.ParseBool(v)
			if err != nil {
				ferr = fmt.Errorf("--%s: %w", f.Name, err)
			}
			v = strconv.FormatBool(!b)
		}
		flags[cf.key] = v
	})
	if ferr != nil {
		return nil, ferr
	}
	l, err := config.Load(config.Source{File: *c.file, Env: os.Environ(), Flags: flags})
	if err != nil || c.keepDir {
		return l, err
	}
	if l.Config.Plugins.Dir, err = pluginDir(l.Config.Plugins.Dir); err != nil {
		return nil, err
	}
	return l, nil
}

// newConfigLogger is the log of long-running commands: the configured
// level and format (debug with TOOLSHED_DEBUG=1).
func newConfigLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(c.Level))
	if os.Getenv("TOOLSHED_DEBUG") != "" {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// builtinTools are the always-on built-ins the configuration enables, in a
// fixed order.
func builtinTools(a config.Agent) ([]host.GoTool, error) {
	var out []host.GoTool
	if a.Time {
		out = append(out, builtin.CurrentTime(nil))
	}
	if a.Todo {
		out = append(out, builtin.Todo())
	}
	if a.Workspace != "" {
		ws, err := builtin.Workspace(a.Workspace)
		if err != nil {
			return nil, fmt.Errorf("agent.workspace: %w", err)
		}
		out = append(out, ws...)
	}
	if a.Skills != "" {
		sk, err := builtin.Skills(a.Skills)
		if err != nil {
			return nil, fmt.Errorf("agent.skills: %w", err)
		}
		out = append(out, sk)
	}
	if a.Shell {
		if a.Workspace == "" {
			return nil, errors.New("agent.shell (--shell) needs agent.workspace (--workspace): the directory the commands run in")
		}
		out = append(out, builtin.Shell(a.Workspace, 0, 0))
	}
	return out, nil
}

// modelClient is the upstream client, or nil when no endpoint is set.
func modelClient(m config.Model) *openai.Client {
	if m.BaseURL == "" {
		return nil
	}
	cfg := openai.DefaultConfig(m.APIKey)
	cfg.BaseURL = strings.TrimRight(m.BaseURL, "/")
	return openai.NewClientWithConfig(cfg)
}

var errNoModel = errors.New("no model endpoint: set model.base_url in toolshed.yaml, TOOLSHED_MODEL_BASE_URL or OPENAI_BASE_URL (or --base-url) to an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")

// agent is a configured agent host and what it owns.
type agent struct {
	host      *host.Host
	client    *openai.Client // nil without an upstream
	runtime   *wasm.Host
	op        *operator
	artifacts *artifact.Store // the files plugins store, with their retention
}

func (a *agent) close() {
	a.runtime.Close(context.Background())
	a.op.close()
}

// memoryBudget is the plugin memory budget and each key's share of it,
// in bytes, as wasm.Options takes them: server.instance_memory_mb (0:
// wasm's default share of the process's memory) and
// server.per_key.instance_memory_mb (0: half the budget when more than
// one API key is configured, else no share).
func memoryBudget(s config.Server) (budget, perKey int64) {
	budget = int64(s.InstanceMemoryMB) << 20
	if budget == 0 {
		budget = wasm.DefaultMemoryBudget()
	}
	perKey = int64(s.PerKey.InstanceMemoryMB) << 20
	if perKey == 0 && len(s.APIKeys) > 1 {
		perKey = budget / 2
	}
	return budget, perKey
}

// newAgent builds the plugin runtime and the agent host from the
// configuration. snapshot returns the catalog (fixed or live). Without an
// upstream model the host still runs tools (MCP); requestClient says
// whether one is required.
//
// artifactLink, when set, is how the model may link an artifact for the
// user (toolshed serve's /v1/artifacts URL).
func newAgent(cfg *config.Config, snapshot func() *catalog.Snapshot, log *slog.Logger, stderr io.Writer, requireModel bool,
	artifactLink func(artifact.Artifact) string) (*agent, error) {
	client := modelClient(cfg.Model)
	if client == nil && requireModel {
		return nil, errNoModel
	}
	tools, err := builtinTools(cfg.Agent)
	if err != nil {
		return nil, err
	}
	op, err := loadOperator(cfg.Plugins.Dir, cfg.Plugins.Grants, sqlcap.Options{TenantSlots: cfg.Server.PerKey.DBSlots})
	if err != nil {
		return nil, err
	}
	if op.source != "" {
		log.Info("plugin grants", "file", op.source)
	}
	op.withLimits(cfg.Limits)
	wopts := op.options(cfg.Plugins.CacheDir, cfg.Plugins.Pool, stderr)
	wopts.Logger = log
	wopts.MemoryBudget, wopts.TenantMemory = memoryBudget(cfg.Server)
	wopts.ReclaimIdle = cfg.Server.ReclaimIdle
	wopts.MemoryWait = cfg.Server.InstanceMemoryWait
	store := artifact.New(artifact.Options{MaxAge: cfg.Artifacts.MaxAge, MaxBytes: int64(cfg.Artifacts.MaxMB) << 20,
		Dirs: op.artifactDirs()})
	wopts.Artifacts = store
	if n, err := store.Sweep(); err != nil || n > 0 { // what earlier runs left past retention
		log.Info("artifacts past their retention removed", "removed", n, "error", err)
	}
	rt, err := wasm.New(wopts)
	if err != nil {
		op.close()
		return nil, err
	}
	hopts := host.Options{
		Client:         client,
		Model:          cfg.Model.Name,
		Tools:          tools,
		Catalog:        snapshot,
		Runtime:        rt,
		Search:         host.SearchOptions{Mode: host.Mode(cfg.Search.Mode), LLMModel: cfg.Search.Model, Limit: cfg.Search.Limit, Budget: cfg.Search.Budget, MinScore: cfg.Search.MinScore},
		MaxRounds:      cfg.Agent.MaxRounds,
		Retries:        cfg.Model.Retries,
		RequestTimeout: cfg.Model.Timeout,
		SystemPrompt:   cfg.Agent.SystemPrompt,
		AutoDiscover:   cfg.Agent.AutoDiscover,
		Logger:         log,
		ArtifactLink:   artifactLink,
	}
	if e := cfg.Search.Embeddings; e.BaseURL != "" {
		key := e.APIKey
		if key == "" && strings.TrimRight(e.BaseURL, "/") == strings.TrimRight(cfg.Model.BaseURL, "/") {
			key = cfg.Model.APIKey // the same provider: the same key
		}
		hopts.Search.Embedder = &embed.Client{BaseURL: strings.TrimRight(e.BaseURL, "/"), Model: e.Model, Key: key, Dimensions: e.Dimensions}
		hopts.Search.EmbedTimeout = e.Timeout
	}
	if cfg.Model.Retries == 0 {
		hopts.Retries = -1
	}
	if client != nil {
		// Model calls go over the wire as the host speaks it, which sees
		// the upstream's status codes and Retry-After.
		hopts.Upstream = &host.Upstream{BaseURL: cfg.Model.BaseURL, APIKey: cfg.Model.APIKey}
	}
	if hopts.ContinuationKey, err = cfg.Server.ContinuationKeyBytes(); err != nil {
		rt.Close(context.Background())
		op.close()
		return nil, fmt.Errorf("server.continuation_key: %w", err)
	}
	if hopts.Client == nil {
		// Tools only (MCP): the host needs a client value; model calls fail.
		hopts.Client = openai.NewClientWithConfig(openai.DefaultConfig(""))
	}
	h, err := host.New(hopts)
	if err != nil {
		rt.Close(context.Background())
		op.close()
		return nil, err
	}
	return &agent{host: h, client: client, runtime: rt, op: op, artifacts: store}, nil
}

// cmdConfigCmd: toolshed config print.
func cmdConfigCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "print" {
		fmt.Fprintln(stderr, "usage: toolshed config print [--config FILE] [flags]")
		return errUsage
	}
	fs := newFlags("config print", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed config print [--config FILE] [flags]")
		fs.PrintDefaults()
	}
	names := make([]string, 0, len(configFlags))
	for n := range configFlags {
		names = append(names, n)
	}
	slices.Sort(names)
	cc := addConfigFlags(fs, names...)
	cc.keepDir = true
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	l, err := cc.load()
	if err != nil {
		return err
	}
	out, err := l.Redacted()
	if err != nil {
		return err
	}
	src := "defaults and environment"
	if l.File != "" {
		src = l.File + ", environment"
	}
	fmt.Fprintf(stdout, "# effective configuration (%s, flags); secrets redacted\n%s", src, out)
	return nil
}
