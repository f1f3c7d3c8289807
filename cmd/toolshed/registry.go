package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/metrics"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/oci"
)

// The registry's configuration flags (push, pull).
func init() {
	configFlags["plain-http"] = configFlag{key: "registry.plain_http", usage: "allow plain HTTP to a registry that is not loopback"}
	configFlags["username"] = configFlag{key: "registry.username", usage: "registry user name (password: --password-stdin or $TOOLSHED_REGISTRY_PASSWORD)"}
	configFlags["docker-config"] = configFlag{key: "registry.docker_config", usage: "Docker config.json `FILE` with registry credentials (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)"}
}

var registryFlagNames = []string{"plain-http", "username", "docker-config"}

// registryClient is the OCI client of a configuration. httpClient nil is
// oras-go's retrying client (the commands); serve passes its own.
func registryClient(c config.Registry, httpClient *http.Client) (*oci.Client, error) {
	return oci.NewClient(oci.Options{PlainHTTP: c.PlainHTTP, Username: c.Username, Password: c.Password,
		DockerConfig: c.DockerConfig, HTTPClient: httpClient})
}

// registryCommand parses push and pull: the registry flags, --config,
// --password-stdin and the command's own, then the configuration.
func registryCommand(name, usage string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) ([]string, *config.Loaded, error) {
	fs := newFlags("plugins "+name, stderr)
	cc := addConfigFlags(fs, registryFlagNames...)
	cc.keepDir = true // only pull without DIR needs it (pluginDir)
	passStdin := fs.Bool("password-stdin", false, "read the registry password from standard input")
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	l, err := cc.load()
	if err != nil {
		return nil, nil, err
	}
	if *passStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("--password-stdin: %w", err)
		}
		l.Registry.Password = strings.TrimRight(line, "\r\n")
		if l.Registry.Username == "" {
			return nil, nil, fmt.Errorf("--password-stdin needs --username (or registry.username)")
		}
	}
	return pos, l, nil
}

// pluginsPush is toolshed plugins push REF MANIFEST.json.
func pluginsPush(args []string, stdout, stderr io.Writer) error {
	const usage = "usage: toolshed plugins push [--username U --password-stdin] [--docker-config FILE] [--plain-http] REF MANIFEST.json"
	pos, l, err := registryCommand("push", usage, args, stderr, nil)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	p, err := oci.ReadPlugin(pos[1])
	if err != nil {
		return err
	}
	c, err := registryClient(l.Registry, nil)
	if err != nil {
		return err
	}
	d, err := c.Push(context.Background(), pos[0], p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s %s to %s\ndigest: %s\n", p.Name, p.Version, pos[0], d)
	return nil
}

// pluginsPull is toolshed plugins pull REF [DIR].
func pluginsPull(args []string, stdout, stderr io.Writer) error {
	const usage = "usage: toolshed plugins pull [--username U --password-stdin] [--docker-config FILE] [--plain-http] [--force] REF [DIR]"
	var force *bool
	pos, l, err := registryCommand("pull", usage, args, stderr, func(fs *flag.FlagSet) {
		force = fs.Bool("force", false, "overwrite NAME.json and NAME.wasm even if they were not pulled from a registry")
	})
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	dir := l.Plugins.Dir
	if len(pos) == 2 {
		dir = pos[1]
	} else if dir, err = pluginDir(dir); err != nil {
		return err
	}
	c, err := registryClient(l.Registry, nil)
	if err != nil {
		return err
	}
	p, err := c.Pull(context.Background(), pos[0])
	if err != nil {
		return err
	}
	if err := oci.WriteDir(dir, p, pos[0], *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pulled %s %s (%s), verified: layer digests, manifest, module sha256 %s\n  %s\n  %s\n",
		p.Name, p.Version, p.Digest, p.ModuleSHA256(), filepath.Join(dir, p.ManifestFile()), filepath.Join(dir, p.ModuleFile()))
	return nil
}

// registryHTTPClient is serve's client for registries: no retries inside
// a round (the next round is the retry), bounded waits.
func registryHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}}
}

// newRegistrySync makes serve's syncer when registry.sources lists any
// (nil otherwise): plugins pulled into plugins.dir, the catalog reloaded
// after each, the sources' state in metrics.
func newRegistrySync(cfg *config.Config, live *catalog.Live, m *metrics.Metrics, log *slog.Logger) (*oci.Syncer, error) {
	if len(cfg.Registry.Sources) == 0 {
		return nil, nil
	}
	c, err := registryClient(cfg.Registry, registryHTTPClient())
	if err != nil {
		return nil, err
	}
	s, err := oci.NewSyncer(oci.SyncOptions{Dir: cfg.Plugins.Dir, Sources: cfg.Registry.Sources, Interval: cfg.Registry.Poll,
		Client: c, Logger: log, OnUpdate: func() { live.Reload() }})
	if err != nil {
		return nil, fmt.Errorf("registry.sources: %w", err)
	}
	if m != nil {
		if err := m.Register(syncCollectors(s)...); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// syncCollectors are the sources' series: one per configured reference
// (a bounded set).
func syncCollectors(s *oci.Syncer) []prometheus.Collector {
	var out []prometheus.Collector
	for i, st := range s.Status() {
		labels := prometheus.Labels{"source": st.Reference}
		get := func() oci.SourceStatus { return s.Status()[i] }
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolshed_registry_source_failing", ConstLabels: labels,
			Help: "1 when the last sync of this source failed (the last good version stays), else 0."}, func() float64 {
			if get().Error != "" {
				return 1
			}
			return 0
		}))
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolshed_registry_source_failures_total", ConstLabels: labels,
			Help: "Syncs of this source that failed: registry unreachable, artifact refused."}, func() float64 { return float64(get().Failures) }))
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolshed_registry_source_updates_total", ConstLabels: labels,
			Help: "Versions of this source's plugin written into the plugin folder."}, func() float64 { return float64(get().Updates) }))
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolshed_registry_source_last_success_timestamp_seconds", ConstLabels: labels,
			Help: "When this source last synced without error (Unix time; 0 never)."}, func() float64 {
			if t := get().LastSuccess; !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		}))
	}
	out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolshed_registry_syncs_total",
		Help: "Registry sync rounds completed."}, func() float64 { return float64(s.Rounds()) }))
	return out
}

// runningDigest is the OCI digest of the plugin the catalog runs, and the
// reference it was pulled from, when it came from a registry: the record
// beside it describes this very version (same version, same module).
func runningDigest(p *catalog.Plugin) (digest, source string) {
	dir := filepath.Dir(p.ManifestPath)
	rec, err := oci.ReadRecord(dir, p.Name())
	if err != nil || rec == nil || rec.Version != p.Manifest.Version || rec.ModuleSHA256 != p.Manifest.SHA256 ||
		filepath.Base(p.ManifestPath) != p.Name()+".json" {
		return "", ""
	}
	return rec.Digest, rec.Reference
}

// readiness says whether serve should receive traffic: the catalog is
// loaded and every registry source has a version in the folder, and
// shutdown has not begun.
func readiness(live *catalog.Live, sync *oci.Syncer, stopping <-chan struct{}) (bool, string) {
	select {
	case <-stopping:
		return false, "shutting down"
	default:
	}
	if live == nil || live.Snapshot() == nil {
		return false, "the catalog is not loaded"
	}
	if sync != nil {
		return sync.Ready()
	}
	return true, ""
}

// readyzHandler is GET /readyz: 200 "ready", or 503 with the reason.
// Liveness (/healthz) stays 200 meanwhile: a replica waiting for its
// registry is not broken.
func readyzHandler(ready func() (bool, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ok, why := ready(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", why)
			return
		}
		io.WriteString(w, "ready\n")
	}
}

// probePath reports the paths that answer without an API key: the
// kubelet's probes carry none, and they reveal nothing.
func probePath(p string) bool { return p == "/healthz" || p == "/readyz" }

// pluginsRegistry is toolshed plugins push and pull.
func pluginsRegistry(cmd string, args []string, stdout, stderr io.Writer) error {
	if cmd == "push" {
		return pluginsPush(args, stdout, stderr)
	}
	return pluginsPull(args, stdout, stderr)
}

// registryDir creates the plugin folder registry.sources pull into (an
// empty volume's first start).
func registryDir(cfg *config.Config) error {
	if len(cfg.Registry.Sources) == 0 {
		return nil
	}
	return os.MkdirAll(cfg.Plugins.Dir, 0o755)
}
