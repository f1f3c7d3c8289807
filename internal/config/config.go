// Package config is Toolshed's configuration: defaults, then a YAML file
// (toolshed.yaml), then TOOLSHED_* environment variables, then command-line
// flags, each overriding the one before. Unknown keys and bad values are
// errors that name the key. Secrets never leave Redacted unmasked.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/toolshed/toolshed/internal/redisurl"
)

// Config is the effective configuration. Field tags are the keys.
type Config struct {
	Model   Model   `koanf:"model"`
	Search  Search  `koanf:"search"`
	Plugins Plugins `koanf:"plugins"`
	Limits  Limits  `koanf:"limits"`
	Agent   Agent   `koanf:"agent"`
	Server  Server  `koanf:"server"`
	// Artifacts is the retention of the files tools produce (charts).
	Artifacts Artifacts `koanf:"artifacts"`
	Log       Log       `koanf:"log"`

	Registry Registry `koanf:"registry"`
}

// Model is the upstream OpenAI-compatible endpoint.
type Model struct {
	BaseURL string        `koanf:"base_url"`
	APIKey  string        `koanf:"api_key"` // secret
	Name    string        `koanf:"name"`
	Timeout time.Duration `koanf:"timeout"` // one model call
	Retries int           `koanf:"retries"`
}

// Search configures tool_search.
type Search struct {
	Mode     string  `koanf:"mode"`
	Model    string  `koanf:"model"`
	Limit    int     `koanf:"limit"`
	Budget   int     `koanf:"budget"`
	MinScore float64 `koanf:"min_score"`
	// Embeddings is the semantic stage of the LLM's candidate list (off
	// when its base_url is empty).
	Embeddings Embeddings `koanf:"embeddings"`
}

// Embeddings is an OpenAI-compatible embeddings endpoint (POST
// {base_url}/embeddings) that tool_search embeds the catalog and each
// LLM-path query with, so that the model's candidate list also holds the
// tools nearest in meaning to the query.
type Embeddings struct {
	BaseURL string `koanf:"base_url"`
	APIKey  string `koanf:"api_key"` // secret; empty: model.api_key when the base URLs match
	Model   string `koanf:"model"`
	// Dimensions asks for shorter vectors (0: the model's own); memory is
	// about tools × dimensions × 8 bytes.
	Dimensions int           `koanf:"dimensions"`
	Timeout    time.Duration `koanf:"timeout"` // one query's embedding
}

// Plugins is the plugin directory and what the operator grants.
type Plugins struct {
	Dir      string        `koanf:"dir"`
	Grants   string        `koanf:"grants"`
	Watch    bool          `koanf:"watch"`
	Poll     time.Duration `koanf:"poll"`
	CacheDir string        `koanf:"cache_dir"`
	Pool     int           `koanf:"pool"`
}

// Limits are the operator's ceilings on what any plugin manifest may ask
// and the quotas of its capabilities. Zero means the built-in default
// ceiling (host/wasm's Default* constants), never "no limit"; a manifest
// asking more gets the ceiling and a warning. The grants file's "caps"
// may lower them further.
type Limits struct {
	Timeout        time.Duration `koanf:"timeout"`
	MaxMemoryMB    int           `koanf:"max_memory_mb"`
	MaxOutputKB    int           `koanf:"max_output_kb"`
	MaxLogKB       int           `koanf:"max_log_kb"`
	MaxLogLines    int           `koanf:"max_log_lines"`
	MaxArtifacts   int           `koanf:"max_artifacts"`
	MaxArtifactMB  int           `koanf:"max_artifact_mb"`
	MaxModuleMB    int           `koanf:"max_module_mb"`
	CompileTimeout time.Duration `koanf:"compile_timeout"`
}

// Agent is the agent loop and its always-on built-in tools.
type Agent struct {
	MaxRounds    int    `koanf:"max_rounds"`
	SystemPrompt string `koanf:"system_prompt"`
	Time         bool   `koanf:"time"`
	Todo         bool   `koanf:"todo"`
	Workspace    string `koanf:"workspace"`
	Skills       string `koanf:"skills"`
	Shell        bool   `koanf:"shell"`
	// AutoDiscover: a call to a deferred tool not discovered yet
	// discovers it instead of failing (the model, or an MCP client, may
	// call a tool by name without tool_search).
	AutoDiscover bool `koanf:"auto_discover"`
}

// embedMaxDimensions bounds search.embeddings.dimensions (embed.MaxDimensions).
const embedMaxDimensions = 16384

// MaxInstanceMemoryWait bounds server.instance_memory_wait (wasm.MaxMemoryWait).
const MaxInstanceMemoryWait = 5 * time.Minute

// Server is toolshed serve.
type Server struct {
	Addr            string        `koanf:"addr"`
	APIKeys         []string      `koanf:"api_keys"` // secret
	AllowOpen       bool          `koanf:"allow_open"`
	MaxBodyBytes    int64         `koanf:"max_body_bytes"`
	RequestTimeout  time.Duration `koanf:"request_timeout"`
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	MaxConcurrent   int           `koanf:"max_concurrent"`
	// ContinuationKey signs the state handed to clients in response ids
	// (base64, at least 32 bytes decoded). Replicas behind one load
	// balancer share it so a continuation lands on any of them; empty
	// means a random key per process.
	ContinuationKey string `koanf:"continuation_key"` // secret
	// IdleTimeout closes a keep-alive HTTP connection idle this long.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// PublicURL is the server's address as its clients reach it (behind a
	// proxy: the proxy's), for the artifact links the model is given;
	// empty: http://ADDR.
	PublicURL string `koanf:"public_url"`
	// MCP is the MCP endpoint's sessions.
	MCP MCP `koanf:"mcp"`
	// InstanceMemoryMB bounds the linear memory of all plugin instances
	// together; 0: a share of the memory the process may use (its cgroup
	// limit, else physical memory) that leaves room for the rest.
	InstanceMemoryMB int `koanf:"instance_memory_mb"`
	// ReclaimIdle: at the memory budget, the instances of sessions idle
	// this long are closed to make room first.
	ReclaimIdle time.Duration `koanf:"reclaim_idle"`
	// InstanceMemoryWait: a call whose new plugin instance finds no room
	// in the memory budget (or its key's share), after idle instances were
	// reclaimed, waits this long for room, in arrival order, before it
	// fails; 0 fails at once. At most MaxInstanceMemoryWait.
	InstanceMemoryWait time.Duration `koanf:"instance_memory_wait"`
	// PerKey are each API key's shares, so that one key cannot take all.
	PerKey PerKey `koanf:"per_key"`
	// Responses is what POST /v1/responses keeps for previous_response_id.
	Responses Responses `koanf:"responses"`
	// Sessions is where MCP sessions live.
	Sessions Sessions `koanf:"sessions"`
}

// Sessions: where the MCP sessions of /mcp live. Store, a redis:// or
// rediss:// (TLS) URL of Redis or Valkey, keeps them (and their counts
// against server.mcp.max_sessions and server.per_key.mcp_sessions) where
// every replica finds them, so that any replica serves any request; empty:
// each process's memory (one replica, or a load balancer with affinity).
type Sessions struct {
	Store string `koanf:"store"` // its password is secret
	// CA is a PEM file of the authorities a rediss:// store's certificate
	// must chain to; "": the system's.
	CA string `koanf:"ca"`
}

// Responses: the Responses API's responses kept in memory, for
// previous_response_id. Keep 0 keeps none (previous_response_id is
// refused with a 400 saying so; clients send the items, store: false).
type Responses struct {
	Keep    int           `koanf:"keep"`
	KeepFor time.Duration `koanf:"keep_for"`
}

// PerKey are one API key's shares of what the server's keys share.
type PerKey struct {
	// InstanceMemoryMB bounds what one key's sessions' plugin instances
	// hold together; 0: half of the budget when more than one key is
	// configured, else the whole budget.
	InstanceMemoryMB int `koanf:"instance_memory_mb"`
	// MCPSessions bounds the MCP sessions one key holds alive at once; 0:
	// half of server.mcp.max_sessions when more than one key is
	// configured, else no share.
	MCPSessions int `koanf:"mcp_sessions"`
	// DBSlots bounds the queries one key runs at once on each database
	// (of its database.max_concurrent slots, 4); 0: half of them, rounded
	// up.
	DBSlots int `koanf:"db_slots"`
}

// MCP bounds the sessions of /mcp (streamable HTTP).
type MCP struct {
	// MaxSessions bounds the sessions alive at once, counted from
	// initialize; more are refused (JSON-RPC error, HTTP 503).
	MaxSessions int `koanf:"max_sessions"`
	// InitTimeout drops a session whose client sent no
	// notifications/initialized within it.
	InitTimeout time.Duration `koanf:"init_timeout"`
	// IdleTimeout closes a session that sent no request this long.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// EvictAfter: when full, initialize closes the session idle longest
	// if it is idle at least this long; 0: never.
	EvictAfter time.Duration `koanf:"evict_after"`
	// Dispatcher adds the call_tool tool to every session, for clients
	// that ignore notifications/tools/list_changed (docs/SERVING.md).
	Dispatcher bool `koanf:"dispatcher"`
}

// Artifacts is how long the files tools produce are kept, and when they
// are small enough to be sent inline.
type Artifacts struct {
	// MaxAge removes an artifact this old.
	MaxAge time.Duration `koanf:"max_age"`
	// MaxMB bounds the artifacts kept, all together, at every write: a
	// write that would pass it removes the writing key's oldest first.
	MaxMB int `koanf:"max_mb"`
	// InlineKB: an artifact up to this size is also sent inline (a data:
	// URL to OpenAI clients); 0: never.
	InlineKB int `koanf:"inline_kb"`
}

// Registry is where toolshed serve pulls plugins from (OCI registries)
// into plugins.dir, and the credentials of toolshed plugins push/pull.
type Registry struct {
	// Sources are OCI references: REPO:TAG follows the tag, REPO@sha256:...
	// pins a digest.
	Sources      []string      `koanf:"sources"`
	Poll         time.Duration `koanf:"poll"` // between syncs; 0 syncs once at start
	PlainHTTP    bool          `koanf:"plain_http"`
	Username     string        `koanf:"username"`
	Password     string        `koanf:"password"` // secret
	DockerConfig string        `koanf:"docker_config"`
}

// Log is the log output.
type Log struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
}

// Defaults are the values before any source.
func Defaults() map[string]any {
	return map[string]any{
		"model.base_url":                    "",
		"model.api_key":                     "",
		"model.name":                        "gpt-4o-mini",
		"model.timeout":                     "2m",
		"model.retries":                     3,
		"search.mode":                       "hybrid",
		"search.model":                      "",
		"search.limit":                      5,
		"search.budget":                     8,
		"search.min_score":                  0.0,
		"search.embeddings.base_url":        "",
		"search.embeddings.api_key":         "",
		"search.embeddings.model":           "text-embedding-3-small",
		"search.embeddings.dimensions":      0,
		"search.embeddings.timeout":         "5s",
		"plugins.dir":                       "",
		"plugins.grants":                    "",
		"plugins.watch":                     true,
		"plugins.poll":                      "2s",
		"plugins.cache_dir":                 "",
		"plugins.pool":                      2,
		"limits.timeout":                    "0s",
		"limits.max_memory_mb":              0,
		"limits.max_output_kb":              0,
		"limits.max_log_kb":                 0,
		"limits.max_log_lines":              0,
		"limits.max_artifacts":              0,
		"limits.max_artifact_mb":            0,
		"limits.max_module_mb":              0,
		"limits.compile_timeout":            "0s",
		"agent.max_rounds":                  16,
		"agent.system_prompt":               "",
		"agent.time":                        true,
		"agent.todo":                        true,
		"agent.workspace":                   "",
		"agent.skills":                      "",
		"agent.shell":                       false,
		"agent.auto_discover":               false,
		"server.addr":                       "127.0.0.1:8080",
		"server.api_keys":                   []string{},
		"server.allow_open":                 false,
		"server.max_body_bytes":             4 << 20,
		"server.request_timeout":            "10m",
		"server.shutdown_timeout":           "30s",
		"server.max_concurrent":             256,
		"server.continuation_key":           "",
		"registry.sources":                  []string{},
		"registry.poll":                     "1m",
		"registry.plain_http":               false,
		"registry.username":                 "",
		"registry.password":                 "",
		"registry.docker_config":            "",
		"server.idle_timeout":               "2m",
		"server.public_url":                 "",
		"server.mcp.max_sessions":           256,
		"server.mcp.init_timeout":           "10s",
		"server.mcp.idle_timeout":           "30m",
		"server.mcp.evict_after":            "1m",
		"server.mcp.dispatcher":             false,
		"server.instance_memory_mb":         0,
		"server.reclaim_idle":               "1m",
		"server.instance_memory_wait":       "0s",
		"server.per_key.instance_memory_mb": 0,
		"server.per_key.mcp_sessions":       0,
		"server.per_key.db_slots":           0,
		"server.responses.keep":             0,
		"server.responses.keep_for":         "1h",
		"server.sessions.store":             "",
		"server.sessions.ca":                "",
		"artifacts.max_age":                 "24h",
		"artifacts.max_mb":                  512,
		"artifacts.inline_kb":               256,
		"log.level":                         "info",
		"log.format":                        "text",
	}
}

// secrets are keys whose values Redacted masks.
var secrets = []string{"model.api_key", "search.embeddings.api_key", "server.api_keys", "server.continuation_key", "registry.password"}

// envAliases are environment variables kept from before the
// configuration file: they map to keys below TOOLSHED_* of the same key.
var envAliases = map[string]string{
	"TOOLSHED_PLUGINS": "plugins.dir",
	"TOOLSHED_MODEL":   "model.name",
}

// envOther are TOOLSHED_* variables that are not configuration keys.
var envOther = []string{"TOOLSHED_CONFIG", "TOOLSHED_DEBUG", "TOOLSHED_BENCH_CACHE",
	"TOOLSHED_WASM_SNAPSHOTS"} // "off": no snapshot instances (host/wasm, docs/RUNTIME.md)

// Source is where a configuration comes from.
type Source struct {
	// File is the YAML file; "" looks for $TOOLSHED_CONFIG, then
	// ./toolshed.yaml (absent is fine then; a named file must exist).
	File string
	// Env is the environment as "KEY=value" (os.Environ()).
	Env []string
	// Flags are the keys set on the command line, with their values.
	Flags map[string]string
}

// Loaded is a configuration and where it came from.
type Loaded struct {
	Config
	File string // the file read, or ""
	ko   *koanf.Koanf
}

// Load reads the sources in order and checks the result.
func Load(src Source) (*Loaded, error) {
	ko := koanf.New(".")
	defaults := Defaults()
	if err := ko.Load(confmap.Provider(defaults, "."), nil); err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range src.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	// The OpenAI clients' own variables are the weakest source.
	for name, key := range map[string]string{"OPENAI_BASE_URL": "model.base_url", "OPENAI_API_KEY": "model.api_key"} {
		if v := env[name]; v != "" {
			ko.Set(key, v)
		}
	}
	path, required := src.File, true
	if path == "" {
		path = env["TOOLSHED_CONFIG"]
	}
	if path == "" {
		path, required = "toolshed.yaml", false
	}
	l := &Loaded{ko: ko}
	if _, err := os.Stat(path); err == nil || required {
		fileKo := koanf.New(".")
		if err := fileKo.Load(file.Provider(path), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		var keys []string
		for _, k := range fileKo.Keys() {
			if fileKo.Get(k) == nil { // a section with every key commented out is empty, not unknown
				fileKo.Delete(k)
				continue
			}
			keys = append(keys, k)
		}
		if err := checkKeys(keys, defaults, "in "+path); err != nil {
			return nil, err
		}
		if err := ko.Merge(fileKo); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		l.File = path
	}
	for k, def := range defaults { // a list written as one string: "a,b"
		if _, isList := def.([]string); isList {
			if v, ok := ko.Get(k).(string); ok {
				ko.Set(k, listValue(k, v, defaults))
			}
		}
	}
	if err := loadEnv(ko, env, defaults); err != nil {
		return nil, err
	}
	flagKeys := slices.Sorted(maps.Keys(src.Flags))
	for _, k := range flagKeys {
		if _, ok := defaults[k]; !ok {
			return nil, fmt.Errorf("config: unknown key %q", k)
		}
		ko.Set(k, listValue(k, src.Flags[k], defaults))
	}
	if err := l.decode(); err != nil {
		return nil, err
	}
	return l, l.check()
}

// loadEnv applies TOOLSHED_SECTION_KEY variables (TOOLSHED_SERVER_ADDR is
// server.addr) and the aliases; empty variables count as unset.
func loadEnv(ko *koanf.Koanf, env map[string]string, defaults map[string]any) error {
	byEnv := map[string]string{}
	for k := range defaults {
		byEnv["TOOLSHED_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))] = k
	}
	names := slices.Sorted(maps.Keys(env))
	for _, name := range names { // aliases first, so the full names win
		if key, ok := envAliases[name]; ok && env[name] != "" {
			ko.Set(key, env[name])
		}
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "TOOLSHED_") || envAliases[name] != "" || slices.Contains(envOther, name) || env[name] == "" {
			continue
		}
		key, ok := byEnv[name]
		if !ok {
			return fmt.Errorf("config: environment variable %s is not a configuration key (see toolshed.example.yaml)", name)
		}
		ko.Set(key, listValue(key, env[name], defaults))
	}
	return nil
}

// listValue splits comma-separated values of list keys.
func listValue(key, v string, defaults map[string]any) any {
	if _, ok := defaults[key].([]string); ok {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return v
}

// checkKeys refuses keys the configuration does not have.
func checkKeys(keys []string, defaults map[string]any, where string) error {
	var unknown []string
	for _, k := range keys {
		if _, ok := defaults[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("config: unknown key %q %s (known keys: toolshed.example.yaml)", unknown[0], where)
}

// decode fills Config, naming the key of a value of the wrong type.
func (l *Loaded) decode() error {
	for _, k := range slices.Sorted(maps.Keys(Defaults())) {
		single := koanf.New(".")
		single.Set(k, l.ko.Get(k))
		var c Config
		if err := single.Unmarshal("", &c); err != nil {
			return fmt.Errorf("config: %s: bad value %q: %s", k, fmt.Sprint(l.ko.Get(k)), cleanDecodeError(err))
		}
	}
	return l.ko.Unmarshal("", &l.Config)
}

func cleanDecodeError(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	msg := strings.TrimSpace(lines[len(lines)-1])
	if strings.HasPrefix(msg, "'") {
		if i := strings.Index(msg[1:], "' "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	return strings.Replace(msg, "strconv.ParseInt: ", "", 1)
}

// check validates values that decode but make no sense.
func (l *Loaded) check() error {
	c := &l.Config
	bad := func(key string, format string, args ...any) error {
		return fmt.Errorf("config: %s: %s", key, fmt.Sprintf(format, args...))
	}
	oneOf := func(key, v string, allowed ...string) error {
		if !slices.Contains(allowed, v) {
			return bad(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return nil
	}
	checks := []error{
		oneOf("search.mode", c.Search.Mode, "keyword", "llm", "hybrid"),
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "text", "json"),
	}
	positive := map[string]float64{
		"model.timeout": float64(c.Model.Timeout), "search.limit": float64(c.Search.Limit),
		"search.budget": float64(c.Search.Budget), "agent.max_rounds": float64(c.Agent.MaxRounds),
		"server.max_body_bytes": float64(c.Server.MaxBodyBytes), "server.request_timeout": float64(c.Server.RequestTimeout),
		"server.shutdown_timeout": float64(c.Server.ShutdownTimeout), "server.max_concurrent": float64(c.Server.MaxConcurrent),
		"server.idle_timeout": float64(c.Server.IdleTimeout), "server.mcp.max_sessions": float64(c.Server.MCP.MaxSessions),
		"server.mcp.init_timeout": float64(c.Server.MCP.InitTimeout), "server.mcp.idle_timeout": float64(c.Server.MCP.IdleTimeout),
		"artifacts.max_age": float64(c.Artifacts.MaxAge), "artifacts.max_mb": float64(c.Artifacts.MaxMB),
	}
	for _, k := range slices.Sorted(maps.Keys(positive)) {
		if positive[k] <= 0 {
			checks = append(checks, bad(k, "must be more than 0 (got %v)", l.ko.Get(k)))
		}
	}
	if c.Search.Limit > 20 {
		checks = append(checks, bad("search.limit", "at most 20 (got %d)", c.Search.Limit))
	}
	if c.Model.Retries < 0 {
		checks = append(checks, bad("model.retries", "must not be negative (got %d)", c.Model.Retries))
	}
	notNegative := map[string]float64{
		"limits.timeout": float64(c.Limits.Timeout), "limits.max_memory_mb": float64(c.Limits.MaxMemoryMB),
		"limits.max_output_kb": float64(c.Limits.MaxOutputKB), "limits.max_log_kb": float64(c.Limits.MaxLogKB),
		"limits.max_log_lines": float64(c.Limits.MaxLogLines), "limits.max_artifacts": float64(c.Limits.MaxArtifacts),
		"limits.max_artifact_mb": float64(c.Limits.MaxArtifactMB), "limits.max_module_mb": float64(c.Limits.MaxModuleMB),
		"limits.compile_timeout":    float64(c.Limits.CompileTimeout),
		"server.instance_memory_mb": float64(c.Server.InstanceMemoryMB), "server.per_key.instance_memory_mb": float64(c.Server.PerKey.InstanceMemoryMB),
		"server.per_key.mcp_sessions": float64(c.Server.PerKey.MCPSessions), "server.per_key.db_slots": float64(c.Server.PerKey.DBSlots),
		"server.reclaim_idle":   float64(c.Server.ReclaimIdle),
		"server.responses.keep": float64(c.Server.Responses.Keep), "server.responses.keep_for": float64(c.Server.Responses.KeepFor),
	}
	for _, k := range slices.Sorted(maps.Keys(notNegative)) {
		if notNegative[k] < 0 {
			checks = append(checks, bad(k, "must not be negative (0 is the default ceiling)"))
		}
	}
	switch w := c.Server.InstanceMemoryWait; {
	case w < 0:
		checks = append(checks, bad("server.instance_memory_wait", "must not be negative (0: refuse at once)"))
	case w > MaxInstanceMemoryWait:
		checks = append(checks, bad("server.instance_memory_wait", "at most %s (got %s): a call should not hang on the memory budget longer than a client waits", MaxInstanceMemoryWait, w))
	}
	if u := c.Server.PublicURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		checks = append(checks, bad("server.public_url", "%q is not an http(s) URL", u))
	}
	if u := c.Server.Sessions.Store; u != "" {
		if err := redisurl.Validate(u); err != nil {
			checks = append(checks, bad("server.sessions.store", "%s: %v", redisurl.Redact(u), err))
		}
	}
	if ca := c.Server.Sessions.CA; ca != "" {
		if !strings.HasPrefix(c.Server.Sessions.Store, "rediss://") {
			checks = append(checks, bad("server.sessions.ca", "set, but server.sessions.store is not a rediss:// (TLS) URL"))
		} else if _, err := redisurl.CAPool(ca); err != nil {
			checks = append(checks, bad("server.sessions.ca", "%v", err))
		}
	}
	if c.Server.MCP.EvictAfter < 0 {
		checks = append(checks, bad("server.mcp.evict_after", "must not be negative (0: never evict)"))
	}
	if c.Artifacts.InlineKB < 0 {
		checks = append(checks, bad("artifacts.inline_kb", "must not be negative (0: never inline)"))
	}
	if c.Plugins.Poll < 0 {
		checks = append(checks, bad("plugins.poll", "must not be negative (0 turns polling off)"))
	}
	if c.Registry.Poll < 0 {
		checks = append(checks, bad("registry.poll", "must not be negative (0 syncs once at start)"))
	}
	if c.Registry.Password != "" && c.Registry.Username == "" {
		checks = append(checks, bad("registry.password", "set without registry.username"))
	}
	if c.Server.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Server.Addr); err != nil {
			checks = append(checks, bad("server.addr", "%q is not HOST:PORT", c.Server.Addr))
		}
	}
	for _, u := range [][2]string{{"model.base_url", c.Model.BaseURL}, {"search.embeddings.base_url", c.Search.Embeddings.BaseURL}} {
		if u[1] != "" && !strings.HasPrefix(u[1], "http://") && !strings.HasPrefix(u[1], "https://") {
			checks = append(checks, bad(u[0], "%q is not an http(s) URL", u[1]))
		}
	}
	if c.Search.Embeddings.BaseURL != "" && strings.TrimSpace(c.Search.Embeddings.Model) == "" {
		checks = append(checks, bad("search.embeddings.model", "is empty: name the embedding model (e.g. text-embedding-3-small)"))
	}
	if d := c.Search.Embeddings.Dimensions; d < 0 || d > embedMaxDimensions {
		checks = append(checks, bad("search.embeddings.dimensions", "%d is not from 0 (the model's own) to %d", d, embedMaxDimensions))
	}
	if c.Search.Embeddings.Timeout < 0 {
		checks = append(checks, bad("search.embeddings.timeout", "%s is negative", c.Search.Embeddings.Timeout))
	}
	for i, k := range c.Server.APIKeys {
		if isPlaceholder(k) {
			checks = append(checks, bad("server.api_keys", "key %d is still the example's placeholder (%.12s...): put a real key in the Secret", i+1, k))
		} else if len(k) < 16 {
			checks = append(checks, bad("server.api_keys", "key %d is shorter than 16 characters", i+1))
		}
	}
	for _, kv := range [][2]string{{"model.api_key", c.Model.APIKey}, {"search.embeddings.api_key", c.Search.Embeddings.APIKey}, {"registry.password", c.Registry.Password}, {"server.continuation_key", c.Server.ContinuationKey}} {
		if isPlaceholder(kv[1]) {
			checks = append(checks, bad(kv[0], "is still the example's placeholder (%.12s...): put the real value in the Secret", kv[1]))
		}
	}
	if c.Server.ContinuationKey != "" && !isPlaceholder(c.Server.ContinuationKey) {
		if _, err := c.Server.ContinuationKeyBytes(); err != nil {
			checks = append(checks, bad("server.continuation_key", "%v", err))
		}
	}
	return errors.Join(checks...)
}

// isPlaceholder reports whether a secret is still a placeholder of the
// shipped examples (deploy/kubernetes/secret.yaml: "REPLACE-with-...").
func isPlaceholder(s string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "REPLACE")
}

// ContinuationKeyBytes decodes server.continuation_key; nil when unset.
func (s Server) ContinuationKeyBytes() ([]byte, error) {
	if s.ContinuationKey == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.ContinuationKey))
	if err != nil {
		return nil, fmt.Errorf("not base64 (make one with: head -c 32 /dev/urandom | base64)")
	}
	if len(k) < 32 {
		return nil, fmt.Errorf("%d bytes decoded; at least 32 are needed", len(k))
	}
	return k, nil
}

// Redacted is the effective configuration as YAML, secrets masked, keys
// sorted.
func (l *Loaded) Redacted() ([]byte, error) {
	out := koanf.New(".")
	for _, k := range l.ko.Keys() {
		v := l.ko.Get(k)
		if slices.Contains(secrets, k) {
			v = redact(v)
		}
		if u, ok := v.(string); ok && k == "server.sessions.store" && u != "" {
			v = redisurl.Redact(u) // the host stays, the password goes
		}
		out.Set(k, v)
	}
	return out.Marshal(yaml.Parser())
}

func redact(v any) any {
	switch v := v.(type) {
	case string:
		if v == "" {
			return ""
		}
		return "<redacted>"
	case []string:
		out := make([]string, len(v))
		for i := range v {
			out[i] = "<redacted>"
		}
		return out
	case []any:
		out := make([]string, len(v))
		for i := range v {
			out[i] = "<redacted>"
		}
		return out
	}
	return "<redacted>"
}

// Keys lists every configuration key, sorted.
func Keys() []string { return slices.Sorted(maps.Keys(Defaults())) }

// IsLoopback reports whether an address (HOST:PORT, or a Host header with
// or without its port) names this machine only: localhost or a loopback IP.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
