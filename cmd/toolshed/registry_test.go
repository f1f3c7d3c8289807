package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/oci/ocitest"
	"github.com/toolshed/toolshed/internal/scripted"
)

var (
	replicaPoll    = flag.Duration("replica-poll", time.Second, "TestReplicasConverge: registry.poll of each replica")
	replicaWorkers = flag.Int("replica-workers", 8, "TestReplicasConverge: concurrent clients of the load")
)

// TestPluginsPushPull: toolshed plugins push, then pull into an empty
// folder; a tampered module and an operator's own file are refused and
// nothing is written.
func TestPluginsPushPull(t *testing.T) {
	reg := ocitest.NewRegistry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	src, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(src, "textkit.json"))
	ref := reg.Host + "/plugins/textkit:1"
	code, out, errOut := runCLI("plugins", "push", ref, filepath.Join(src, "textkit.json"))
	if code != 0 || !strings.Contains(out, "digest: sha256:") {
		t.Fatalf("push: %d %s %s", code, out, errOut)
	}
	digest := strings.TrimSpace(out[strings.Index(out, "digest: ")+len("digest: "):])
	dst := filepath.Join(t.TempDir(), "pulled")
	code, out, errOut = runCLI("plugins", "pull", reg.Host+"/plugins/textkit@"+digest, dst)
	if code != 0 || !strings.Contains(out, "verified") {
		t.Fatalf("pull: %d %s %s", code, out, errOut)
	}
	for _, f := range []string{"textkit.json", "textkit.wasm"} {
		want, _ := os.ReadFile(filepath.Join(src, f))
		if !ocitest.SameFile(filepath.Join(dst, f), want) {
			t.Fatalf("%s differs from what was pushed", f)
		}
	}
	if code, out, _ := runCLI("plugins", "validate", dst); code != 0 {
		t.Fatalf("the pulled folder does not validate: %s", out)
	}
	// An operator's own plugin of that name is not overwritten.
	if code, _, errOut := runCLI("plugins", "pull", ref, src); code == 0 || !strings.Contains(errOut, "not pulled from a registry") {
		t.Fatalf("pull over an operator's file: %d %s", code, errOut)
	}
	// A tampered module.
	p, _ := oci.ReadPlugin(filepath.Join(src, "textkit.json"))
	reg.Tamper("sha256:" + p.ModuleSHA256())
	empty := filepath.Join(t.TempDir(), "empty")
	if code, _, errOut := runCLI("plugins", "pull", ref, empty); code == 0 || !strings.Contains(errOut, "mismatched digest") {
		t.Fatalf("tampered pull: %d %s", code, errOut)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatal("a refused pull created the folder")
	}
	// Usage mistakes.
	for _, args := range [][]string{{"plugins", "push", ref}, {"plugins", "pull"}, {"plugins", "pull", "not a reference", dst}} {
		if code, _, _ := runCLI(args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
	if code, _, errOut := runCLI("plugins", "push", "--password-stdin", ref, filepath.Join(src, "textkit.json")); code == 0 || !strings.Contains(errOut, "--username") {
		t.Errorf("--password-stdin without a user: %d %s", code, errOut)
	}
}

// TestServeReadyz: /readyz and /healthz answer the kubelet without an API
// key; every other endpoint still wants one; /readyz turns 503 when
// shutdown begins.
func TestServeReadyz(t *testing.T) {
	s := startServe(t, &scripted.Model{}, map[string]string{"server.api_keys": "0123456789abcdef0123"})
	for _, p := range []string{"/healthz", "/readyz"} {
		if resp, body := send(t, "GET", s.url+p, "", ""); resp.StatusCode != 200 {
			t.Fatalf("%s without a key: %d %s", p, resp.StatusCode, body)
		}
	}
	if resp, _ := send(t, "GET", s.url+"/v1/plugins", "", ""); resp.StatusCode != 401 {
		t.Fatalf("/v1/plugins without a key: %d", resp.StatusCode)
	}
	close(s.server.stopping)
	if resp, body := send(t, "GET", s.url+"/readyz", "", ""); resp.StatusCode != 503 || !strings.Contains(body, "shutting down") {
		t.Fatalf("/readyz while stopping: %d %s", resp.StatusCode, body)
	}
}

// replica is one toolshed serve process.
type replica struct {
	url    string
	cmd    *exec.Cmd
	stderr *lockedWriter
	logs   *strings.Builder
	done   chan error
}

var servingLine = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)

func startReplica(t *testing.T, bin, configPath string) *replica {
	t.Helper()
	logs := &strings.Builder{}
	r := &replica{stderr: &lockedWriter{w: logs}, logs: logs, done: make(chan error, 1)}
	r.cmd = exec.Command(bin, "serve", "--config", configPath)
	r.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DOCKER_CONFIG=" + t.TempDir()}
	r.cmd.Stderr = r.stderr
	stdout, _ := r.cmd.StdoutPipe()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			r.url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	go func() { r.done <- r.cmd.Wait() }()
	if r.url == "" {
		t.Fatalf("serve did not start: %s", logs.String())
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
		}
	})
	return r
}

// pluginsView is what /v1/plugins says of the textkit plugin and its
// source.
type pluginsView struct {
	Version, Digest, Error string
}

func (r *replica) view(t *testing.T) pluginsView {
	resp, err := http.Get(r.url + "/v1/plugins")
	if err != nil {
		t.Fatalf("%s: %v", r.url, err)
	}
	defer resp.Body.Close()
	var v struct {
		Plugins []struct{ Name, Version, Digest string }
		Sources []oci.SourceStatus
	}
	json.NewDecoder(resp.Body).Decode(&v)
	var out pluginsView
	for _, p := range v.Plugins {
		if p.Name == "textkit" {
			out.Version, out.Digest = p.Version, p.Digest
		}
	}
	if len(v.Sources) == 1 {
		out.Error = v.Sources[0].Error
	}
	return out
}

func (r *replica) metric(t *testing.T, name string) string {
	_, body := send(t, "GET", r.url+"/metrics", "", "")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name) {
			return line[strings.LastIndex(line, " ")+1:]
		}
	}
	return ""
}

// TestReplicasConverge: two toolshed serve processes follow one tag of an
// in-process registry while a load of chat completions is spread over
// both. A new version pushed is served by both within twice the poll
// interval and no request fails; a registry outage, a tampered layer and
// a mismatched pin each leave both serving the last good version, with the
// error in /v1/plugins and in metrics. make replicas prints the figures
// (docs/DEPLOY.md).
func TestReplicasConverge(t *testing.T) {
	bin := hostileBinary(t)
	reg := ocitest.NewRegistry(t)
	c, err := oci.NewClient(oci.Options{DockerConfig: filepath.Join(t.TempDir(), "none.json"), HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := reg.Host + "/plugins/textkit:stable"
	d1, err := c.Push(ctx, ref, ocitest.Textkit(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{NoRecord: true}
	up := httptest.NewServer(model)
	defer up.Close()
	poll := *replicaPoll
	var reps []*replica
	start := time.Now()
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		cfg := fmt.Sprintf(`model: {base_url: %q, name: scripted, retries: 0}
plugins: {dir: %q, cache_dir: %q}
agent: {time: false, todo: false}
server: {addr: "127.0.0.1:0", shutdown_timeout: 10s}
registry: {sources: [%q], poll: %s}
log: {level: warn}
`, up.URL+"/v1", filepath.Join(dir, "plugins"), filepath.Join(dir, "cache"), ref, poll)
		path := filepath.Join(dir, "toolshed.yaml")
		os.WriteFile(path, []byte(cfg), 0o644)
		reps = append(reps, startReplica(t, bin, path))
	}
	for _, r := range reps {
		r.waitReady(t, 30*time.Second)
		if v := r.view(t); v.Digest != d1 || v.Version != "1.0.0" {
			t.Fatalf("%s at start: %+v", r.url, v)
		}
	}
	ready := time.Since(start)

	// The load: workers send chat completions to the replicas in turn.
	var served [2]atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for w := 0; w < *replicaWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := w; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := n % 2
				text := fmt.Sprintf("W%d_%d", w, n)
				body := `{"messages":[{"role":"user","content":"use slugify with {\"text\":\"` + text + `\"} to url-slug"}]}`
				resp, err := hc.Post(reps[i].url+"/v1/chat/completions", "application/json", strings.NewReader(body))
				var got string
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					got = string(b)
					if resp.StatusCode != 200 || !strings.Contains(got, `"answer: `+strings.ToLower(strings.ReplaceAll(text, "_", "-"))+`"`) {
						err = fmt.Errorf("replica %d: %d %s", i, resp.StatusCode, got)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				served[i].Add(1)
			}
		}()
	}
	waitFor(t, 30*time.Second, func() bool { return served[0].Load() > 0 && served[1].Load() > 0 }, "load under way")

	// A new version.
	d2, err := c.Push(ctx, ref, ocitest.Textkit(t, "2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	pushed := time.Now()
	var converged [2]time.Duration
	waitFor(t, 10*poll, func() bool {
		all := true
		for i, r := range reps {
			if converged[i] == 0 {
				if v := r.view(t); v.Digest == d2 && v.Version == "2.0.0" {
					converged[i] = time.Since(pushed)
				} else {
					all = false
				}
			}
		}
		return all
	}, "both replicas on 2.0.0")
	convergence := max(converged[0], converged[1])
	if convergence > 2*poll {
		t.Errorf("converged in %s, more than twice the poll interval (%s)", convergence, poll)
	}

	// Faults: each keeps 2.0.0 on both, with the error shown.
	keeps := func(what, want string) {
		t.Helper()
		time.Sleep(2*poll + poll/2)
		for _, r := range reps {
			v := r.view(t)
			if v.Digest != d2 || v.Version != "2.0.0" || !strings.Contains(v.Error, want) {
				t.Fatalf("%s: %s shows %+v, want 2.0.0 at %s and an error containing %q", what, r.url, v, d2, want)
			}
			if m := r.metric(t, "toolshed_registry_source_failing"); m != "1" {
				t.Fatalf("%s: toolshed_registry_source_failing %q, want 1", what, m)
			}
		}
		t.Logf("%s: both replicas keep 2.0.0 (%s); /v1/plugins says: %s", what, d2, reps[0].view(t).Error)
	}
	reg.SetDown(true)
	keeps("registry down", "503")
	reg.SetDown(false)
	v3 := ocitest.Textkit(t, "3.0.0")
	if _, err := c.Push(ctx, ref, v3); err != nil {
		t.Fatal(err)
	}
	reg.Tamper("sha256:" + v3.ManifestSHA256())
	keeps("tampered layer", "mismatched digest")
	v4 := ocitest.Textkit(t, "4.0.0")
	v4.Module = append(v4.Module, 0) // pinned by no manifest
	ocitest.PushUnchecked(t, reg.Host, "plugins/textkit", "stable", v4)
	keeps("mismatched pin", "the manifest pins")

	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed; first: %v", n, firstErr.Load())
	}
	// Drain: SIGTERM ends both cleanly.
	for _, r := range reps {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("%s after SIGTERM: %v\n%s", r.url, err, r.logs.String())
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop on SIGTERM", r.url)
		}
	}
	t.Logf("\n| two replicas, registry.poll %s, %d clients | |\n|---|---|\n"+
		"| ready (first pull, catalog loaded), both | %s |\n"+
		"| convergence on a new version (push → both serve it) | %s (replicas: %s, %s; bound 2 × poll = %s) |\n"+
		"| chat completions served | %d (replica 1: %d, replica 2: %d) |\n"+
		"| failed requests | %d |\n"+
		"| registry down, tampered layer, mismatched pin | both kept the last good version; error in /v1/plugins and toolshed_registry_source_failing |\n",
		poll, *replicaWorkers, ready.Round(time.Millisecond), convergence.Round(time.Millisecond),
		converged[0].Round(time.Millisecond), converged[1].Round(time.Millisecond), 2*poll,
		served[0].Load()+served[1].Load(), served[0].Load(), served[1].Load(), failed.Load())
}

func waitFor(t *testing.T, limit time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPSessionStaysOnItsReplica: without server.sessions.store, an MCP
// session lives in the memory of the replica that answered its
// initialize; the same session id sent to another replica is answered 404
// (the MCP spec then has the client initialize again). With a store, any
// replica serves it (TestReplicasShareSessions; docs/DEPLOY.md).
func TestMCPSessionStaysOnItsReplica(t *testing.T) {
	a := startServe(t, &scripted.Model{}, nil)
	b := startServe(t, &scripted.Model{}, nil)
	post := func(url, session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(data)
	}
	resp, body := post(a.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, id, body)
	}
	if resp, body := post(a.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode/100 != 2 {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := post(b.url, id, list); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the session on another replica: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := post(a.url, id, list); resp.StatusCode != 200 || !strings.Contains(body, "tool_search") {
		t.Fatalf("the session on its replica: %d %s", resp.StatusCode, body)
	}
}

// TestPluginsPushCredentials: a registry that wants a login gets it from
// --username with --password-stdin, or from TOOLSHED_REGISTRY_* variables.
func TestPluginsPushCredentials(t *testing.T) {
	reg := ocitest.NewRegistry(t)
	reg.RequireAuth("alice", "s3cret-pass")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	src, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(src, "textkit.json"))
	ref := reg.Host + "/plugins/textkit:1"
	if code, _, errOut := runCLI("plugins", "push", ref, filepath.Join(src, "textkit.json")); code == 0 || !strings.Contains(errOut, "credential") {
		t.Fatalf("anonymous push: %d %s", code, errOut)
	}
	old := stdin
	stdin = strings.NewReader("s3cret-pass\n")
	defer func() { stdin = old }()
	if code, out, errOut := runCLI("plugins", "push", "--username", "alice", "--password-stdin", ref, filepath.Join(src, "textkit.json")); code != 0 {
		t.Fatalf("push with --password-stdin: %d %s %s", code, out, errOut)
	}
	t.Setenv("TOOLSHED_REGISTRY_USERNAME", "alice")
	t.Setenv("TOOLSHED_REGISTRY_PASSWORD", "s3cret-pass")
	if code, out, errOut := runCLI("plugins", "pull", ref, filepath.Join(t.TempDir(), "p")); code != 0 {
		t.Fatalf("pull with TOOLSHED_REGISTRY_*: %d %s %s", code, out, errOut)
	}
	code, out, _ := runCLI("config", "print")
	if code != 0 || strings.Contains(out, "s3cret-pass") {
		t.Fatalf("config print shows the registry password: %s", out)
	}
}

// TestServeReadinessFollowsRegistry: a replica whose registry is down at
// its first start is alive but not ready, says why, and becomes ready
// once its sources are pulled; /v1/plugins and metrics show each step.
func TestServeReadinessFollowsRegistry(t *testing.T) {
	reg := ocitest.NewRegistry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c, _ := oci.NewClient(oci.Options{DockerConfig: filepath.Join(t.TempDir(), "none.json"), HTTPClient: &http.Client{}})
	ref := reg.Host + "/plugins/textkit:stable"
	d, err := c.Push(context.Background(), ref, ocitest.Textkit(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	reg.SetDown(true)
	s := startServe(t, &scripted.Model{}, map[string]string{"plugins.dir": filepath.Join(t.TempDir(), "pulled"), "registry.sources": ref})
	ready := func(wantCode int, want string) {
		t.Helper()
		resp, body := send(t, "GET", s.url+"/readyz", "", "")
		if resp.StatusCode != wantCode || !strings.Contains(body, want) {
			t.Fatalf("/readyz: %d %q, want %d %q", resp.StatusCode, body, wantCode, want)
		}
		if resp, _ := send(t, "GET", s.url+"/healthz", "", ""); resp.StatusCode != 200 {
			t.Fatalf("/healthz %d", resp.StatusCode)
		}
	}
	ready(503, "the first registry sync has not finished")
	s.server.sync.SyncOnce(context.Background())
	ready(503, "response status code 503")
	reg.SetDown(false)
	if err := s.server.sync.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	ready(200, "ready")
	_, body := send(t, "GET", s.url+"/v1/plugins", "", "")
	var v struct {
		Plugins []struct{ Name, Version, Digest, Source, SHA256 string }
		Sources []oci.SourceStatus
	}
	json.Unmarshal([]byte(body), &v)
	if len(v.Plugins) != 1 || v.Plugins[0].Digest != d || v.Plugins[0].Source != ref || v.Plugins[0].SHA256 == "" ||
		len(v.Sources) != 1 || v.Sources[0].Error != "" || v.Sources[0].Failures != 1 || v.Sources[0].Updates != 1 {
		t.Fatalf("/v1/plugins: %s", body)
	}
	_, m := send(t, "GET", s.url+"/metrics", "", "")
	for _, want := range []string{`toolshed_registry_source_updates_total{source="` + ref + `"} 1`,
		`toolshed_registry_source_failures_total{source="` + ref + `"} 1`, `toolshed_registry_source_failing{source="` + ref + `"} 0`,
		`toolshed_registry_syncs_total 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
