// Package metrics is the Prometheus series of Toolshed's front ends (the
// OpenAI-compatible endpoint and MCP, over HTTP or stdio), in a registry of
// their own: HTTP requests, sessions, model rounds, searches, tool calls
// and tokens, and the plugin runtime's and live catalog's counters.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
)

// Metrics are the series of one server. All methods are safe for
// concurrent use, and a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec   // endpoint, code
	httpDuration *prometheus.HistogramVec // endpoint
	sessions     *prometheus.CounterVec   // front: chat, responses, mcp
	active       *prometheus.GaugeVec     // front
	rounds       prometheus.Counter
	searches     *prometheus.CounterVec   // mode, path
	fallbacks    *prometheus.CounterVec   // from, to
	toolCalls    *prometheus.CounterVec   // plugin, tool, outcome
	pluginCall   *prometheus.HistogramVec // plugin
	toolTokens   *prometheus.CounterVec   // sent, all_loaded
	modelTokens  *prometheus.CounterVec   // prompt, completion
	clientCalls  prometheus.Counter
	mcpRefused   prometheus.Counter
	mcpKeyRefuse prometheus.Counter
	mcpKeyLive   *prometheus.GaugeVec // key
	mcpKeyMu     sync.Mutex
	mcpKeyCount  map[string]int         // live MCP sessions by key label, for dropping a series at 0
	mcpClosed    *prometheus.CounterVec // reason
	known        func(name string) bool
}

// Options say what the series cover; every field is optional.
type Options struct {
	// Runtime adds the plugin runtime's counters (compiles, instances,
	// pool hits).
	Runtime *wasm.Host
	// Catalog adds the live catalog's reloads, tools and manifest errors.
	Catalog *catalog.Live
	// SQL adds each API key's use of the databases' query slots.
	SQL *sqlcap.Service
	// Artifacts adds the bytes of artifacts kept, in all and by key.
	Artifacts *artifact.Store
	// Known tells real tool names from made-up ones, which are counted as
	// "unknown" (a label per invented name would grow without bound). Nil:
	// every name is its own label.
	Known func(name string) bool
}

// New makes the series in a new registry.
func New(opts Options) *Metrics {
	rt, live := opts.Runtime, opts.Catalog
	m := &Metrics{reg: prometheus.NewRegistry(), known: opts.Known}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_http_requests_total",
		Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolshed_http_request_duration_seconds",
		Help: "HTTP request latency by endpoint.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}, []string{"endpoint"})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_sessions_total",
		Help: "Sessions started: chat (one per chat completion request), responses (one per Responses API request) and mcp (one per MCP client session)."}, []string{"front"})
	m.active = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolshed_sessions_active",
		Help: "Sessions in progress."}, []string{"front"})
	m.rounds = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolshed_model_rounds_total", Help: "Model rounds of the agent loop."})
	m.searches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_searches_total",
		Help: "tool_search calls by mode and the path that answered (keyword, llm, llm-failed, no-llm, cached, budget, invalid)."}, []string{"mode", "path"})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_search_fallbacks_total",
		Help: "Searches that left their first path: hybrid keyword to llm, llm back to keyword (model failed or unavailable)."}, []string{"from", "to"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_tool_calls_total",
		Help: "Tool calls by plugin (builtin for always-on tools and tool_search), tool and outcome (ok, error)."}, []string{"plugin", "tool", "outcome"})
	m.pluginCall = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolshed_plugin_call_duration_seconds",
		Help: "Plugin tool call latency, instance included.", Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)}, []string{"plugin"})
	m.toolTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_tool_definition_tokens_total",
		Help: "Tokens (o200k_base) of tool definitions: sent to the model, and what sending every tool would have cost (all_loaded)."}, []string{"kind"})
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_model_tokens_total",
		Help: "Tokens the upstream model reported using."}, []string{"kind"})
	m.clientCalls = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolshed_client_tool_calls_total",
		Help: "Calls to client-side tools returned to the client."})
	m.mcpRefused = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolshed_mcp_sessions_refused_total",
		Help: "MCP initialize requests refused because server.mcp.max_sessions sessions were alive."})
	m.mcpKeyRefuse = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolshed_mcp_sessions_key_refused_total",
		Help: "MCP initialize requests refused because their API key held its share of sessions (server.per_key.mcp_sessions)."})
	m.mcpKeyLive = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolshed_mcp_key_sessions",
		Help: "MCP sessions over HTTP one API key holds now (server.per_key.mcp_sessions bounds them)."}, []string{"key"})
	m.mcpKeyCount = map[string]int{}
	m.mcpClosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolshed_mcp_sessions_closed_total",
		Help: "MCP sessions ended, by reason: deleted (the client's DELETE), init_timeout (no notifications/initialized in time), failed (initialize failed), ended (idle timeout, shutdown, stdio end)."}, []string{"reason"})
	for _, c := range []prometheus.Collector{m.httpRequests, m.httpDuration, m.sessions, m.active, m.rounds, m.searches,
		m.fallbacks, m.toolCalls, m.pluginCall, m.toolTokens, m.modelTokens, m.clientCalls, m.mcpRefused, m.mcpKeyRefuse, m.mcpKeyLive, m.mcpClosed} {
		f(c)
	}
	if rt != nil {
		stat := func(name, help string, v func(wasm.Stats) float64) {
			f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return v(rt.Stats()) }))
		}
		stat("toolshed_plugin_compiles_total", "Plugin modules compiled (from the cache or not).", func(s wasm.Stats) float64 { return float64(s.Compiles) })
		stat("toolshed_plugin_compile_failures_total", "Plugin modules refused or failed to compile.", func(s wasm.Stats) float64 { return float64(s.CompileFailures) })
		stat("toolshed_plugin_compile_seconds_total", "Time spent compiling plugin modules.", func(s wasm.Stats) float64 { return s.CompileTime.Seconds() })
		stat("toolshed_plugin_instantiations_total", "Plugin instances made, pool refills included.", func(s wasm.Stats) float64 { return float64(s.Instantiations) })
		stat("toolshed_plugin_instantiate_failures_total", "Plugin instances that could not be made.", func(s wasm.Stats) float64 { return float64(s.InstantiateFailures) })
		stat("toolshed_plugin_pool_hits_total", "Sessions' first calls to a plugin served by a pooled instance.", func(s wasm.Stats) float64 { return float64(s.PoolHits) })
		stat("toolshed_plugin_pool_misses_total", "Sessions' first calls to a plugin that had to instantiate.", func(s wasm.Stats) float64 { return float64(s.PoolMisses) })
		stat("toolshed_plugin_snapshots_total", "Plugins snapshotted (their instances restored copy-on-write).", func(s wasm.Stats) float64 { return float64(s.Snapshots) })
		stat("toolshed_plugin_snapshot_failures_total", "Plugin snapshots refused or dropped (capture or known-answer check failed; instances fresh).", func(s wasm.Stats) float64 { return float64(s.SnapshotFailures) })
		stat("toolshed_plugin_restores_total", "Plugin instances restored from a snapshot (of the instantiations).", func(s wasm.Stats) float64 { return float64(s.Restores) })
	}
	if rt != nil || opts.SQL != nil || opts.Artifacts != nil {
		f(newTenancy(rt, opts.SQL, opts.Artifacts))
	}
	if live != nil {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolshed_catalog_reloads_total",
			Help: "Catalog snapshots swapped in by hot reload."}, func() float64 { return float64(live.Reloads()) }))
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolshed_catalog_tools",
			Help: "Deferred tools in the live catalog."}, func() float64 { return float64(len(live.Snapshot().Tools)) }))
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolshed_catalog_manifest_errors",
			Help: "Manifests the live catalog skipped (bad, incomplete, clashing)."}, func() float64 { return float64(len(live.Snapshot().Errors)) }))
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Register adds an embedder's own collectors to the registry (serve adds
// its registry sync's series).
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ObserveHTTP counts one finished request.
func (m *Metrics) ObserveHTTP(endpoint string, code int, took time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(endpoint).Observe(took.Seconds())
}

// SessionStarted counts a session of a front end ("chat", "responses", "mcp") and
// returns the function that ends it.
func (m *Metrics) SessionStarted(front string) func() {
	if m == nil {
		return func() {}
	}
	m.sessions.WithLabelValues(front).Inc()
	g := m.active.WithLabelValues(front)
	g.Inc()
	return g.Dec
}

// ObserveResponse records an agent request's rounds.
func (m *Metrics) ObserveResponse(r *host.Response) {
	if m == nil || r == nil {
		return
	}
	for _, rd := range r.Rounds {
		m.rounds.Inc()
		m.toolTokens.WithLabelValues("sent").Add(float64(rd.ToolTokens))
		m.toolTokens.WithLabelValues("all_loaded").Add(float64(rd.AllToolsTokens))
		for i := range rd.ToolCalls {
			m.ObserveCall(&rd.ToolCalls[i])
		}
	}
	m.modelTokens.WithLabelValues("prompt").Add(float64(r.Usage.PromptTokens))
	m.modelTokens.WithLabelValues("completion").Add(float64(r.Usage.CompletionTokens))
	m.clientCalls.Add(float64(len(r.ClientCalls)))
}

// ObserveCall records one tool call (agent loop or MCP).
func (m *Metrics) ObserveCall(c *host.ToolCallRecord) {
	if m == nil {
		return
	}
	outcome := "ok"
	if c.IsError {
		outcome = "error"
	}
	plugin := c.Plugin
	if plugin == "" {
		plugin = "builtin"
	} else {
		m.pluginCall.WithLabelValues(plugin).Observe(c.Duration.Seconds())
	}
	tool := c.Name
	if m.known != nil && !m.known(tool) {
		tool = "unknown"
	}
	m.toolCalls.WithLabelValues(plugin, tool, outcome).Inc()
	if s := c.Search; s != nil {
		m.searches.WithLabelValues(string(s.Mode), s.Path).Inc()
		switch {
		case s.Mode == host.ModeHybrid && (s.Path == "llm" || s.Path == "llm-failed"):
			m.fallbacks.WithLabelValues("keyword", "llm").Inc()
		}
		if s.Path == "llm-failed" || (s.Path == "no-llm" && s.Mode == host.ModeLLM) {
			m.fallbacks.WithLabelValues("llm", "keyword").Inc()
		}
	}
}

// MCPRefused counts an MCP session refused for want of a slot.
func (m *Metrics) MCPRefused() {
	if m != nil {
		m.mcpRefused.Inc()
	}
}

// MCPKeyRefused counts an MCP session refused because its API key held
// its share of the sessions.
func (m *Metrics) MCPKeyRefused() {
	if m != nil {
		m.mcpKeyRefuse.Inc()
	}
}

// MCPKeySession counts an MCP session of an API key (its tenant id,
// labelled as keyLabel says) and returns the function that ends it; a
// key's series goes when its last session does.
func (m *Metrics) MCPKeySession(tenant string) func() {
	if m == nil {
		return func() {}
	}
	key := keyLabel(tenant)
	m.mcpKeyMu.Lock()
	m.mcpKeyCount[key]++
	m.mcpKeyLive.WithLabelValues(key).Set(float64(m.mcpKeyCount[key]))
	m.mcpKeyMu.Unlock()
	return sync.OnceFunc(func() {
		m.mcpKeyMu.Lock()
		defer m.mcpKeyMu.Unlock()
		if m.mcpKeyCount[key]--; m.mcpKeyCount[key] <= 0 {
			delete(m.mcpKeyCount, key)
			m.mcpKeyLive.DeleteLabelValues(key)
			return
		}
		m.mcpKeyLive.WithLabelValues(key).Set(float64(m.mcpKeyCount[key]))
	})
}

// MCPClosed counts an MCP session that ended, and why.
func (m *Metrics) MCPClosed(reason string) {
	if m != nil {
		m.mcpClosed.WithLabelValues(reason).Inc()
	}
}
