package wasm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// pluginDir writes a plugin directory: for each module, NAME.wasm and a
// manifest NAME.json with the given tools and limits.
type spec struct {
	name   string
	module []byte
	sha    string // "" → the module's own
	tools  []string
	limits string
	caps   string
	extra  string // more manifest fields: `"key": value, ...`
}

func writePlugins(t testing.TB, specs ...spec) *catalog.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for _, s := range specs {
		sum := sha256.Sum256(s.module)
		sha := hex.EncodeToString(sum[:])
		if s.sha != "" {
			sha = s.sha
		}
		var tools []string
		for _, tl := range s.tools {
			tools = append(tools, fmt.Sprintf(`{"name": %q, "description": "test tool %s", "parameters": {"type": "object"}}`, tl, tl))
		}
		if s.limits == "" {
			s.limits = `{}`
		}
		if s.caps == "" {
			s.caps = `{}`
		}
		if s.extra != "" {
			s.extra += ", "
		}
		m := fmt.Sprintf(`{%s"name": %q, "version": "1.0.0", "abi_version": 1, "wasm": "%s.wasm", "sha256": %q, "limits": %s, "capabilities": %s, "tools": [%s]}`,
			s.extra, s.name, s.name, sha, s.limits, s.caps, strings.Join(tools, ","))
		if err := os.WriteFile(filepath.Join(dir, s.name+".json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+".wasm"), s.module, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Fatal(snap.Errors)
	}
	return snap
}

func module(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(plugintest.Build(t, "testdata/plugins/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logBuffer collects the host log for assertions; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newHost(t testing.TB, opts *wasm.Options) (*wasm.Host, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	if opts == nil {
		opts = &wasm.Options{}
	}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(os.TempDir(), "toolshed-test-cache")
	}
	if raceEnabled && opts.Caps.CompileTimeout == 0 {
		// wazero's compiler under the race detector on a loaded machine
		// can take longer than the default budget for a Go module.
		opts.Caps.CompileTimeout = 5 * time.Minute
	}
	h, err := wasm.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, logs
}

func call(t testing.TB, s *wasm.Session, snap *catalog.Snapshot, tool string, args string) (abi.Result, error) {
	t.Helper()
	tl, ok := snap.Tool(tool)
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	return s.Call(context.Background(), tl, json.RawMessage(args))
}

var hostileTools = []string{"ok", "counter", "loop", "memory", "recursion", "panic", "oob", "wrap", "huge",
	"badjson", "extrafield", "files", "env", "socket", "print"}

// TestHostilePlugin shows each misbehaviour contained: a clear error for
// that call, the host still serving, the session's next call on a fresh
// instance, and another session calling all along unaffected.
func TestHostilePlugin(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools,
		limits: `{"timeout_ms": 1000, "max_memory_mb": 64, "max_output_kb": 64}`})
	h, logs := newHost(t, nil)

	// A bystander session calls all the time.
	stop := make(chan struct{})
	var bystander sync.WaitGroup
	bystander.Add(1)
	var byCalls, byFails int
	go func() {
		defer bystander.Done()
		s := h.NewSession()
		defer s.Close(context.Background())
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := call(t, s, snap, "ok", `{}`)
			byCalls++
			if err != nil || res.Content != "fine" {
				byFails++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	cases := []struct {
		tool string
		want string // substring of the *CallError; "a|b": either
	}{
		{"loop", "timed out"},
		// The Go runtime aborts when memory or stack runs out; on a slow
		// machine (the race detector) the deadline may come first.
		{"memory", "trapped: wasm error: unreachable|timed out"},
		{"recursion", "trapped: wasm error: unreachable|timed out"},
		{"panic", "trapped: wasm error: unreachable"},
		{"oob", "outside the module's memory"},
		{"wrap", "outside the module's memory"},
		{"huge", "exceeds the plugin's limit of 65536"},
		{"badjson", "not a valid ABI result"},
		{"extrafield", `unknown field "secret"`},
	}
	s := h.NewSession()
	defer s.Close(context.Background())
	for _, c := range cases {
		start := time.Now()
		_, err := call(t, s, snap, c.tool, `{}`)
		var ce *wasm.CallError
		matched := false
		for _, w := range strings.Split(c.want, "|") {
			matched = matched || (err != nil && strings.Contains(err.Error(), w))
		}
		if !errors.As(err, &ce) || !matched {
			t.Errorf("%s: err = %v, want a CallError with %q", c.tool, err, c.want)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("%s: took %s", c.tool, time.Since(start))
		}
		if s.Instances() != 0 {
			t.Errorf("%s: the failed instance is still in the session", c.tool)
		}
		// The same session goes on, on a fresh instance.
		if res, err := call(t, s, snap, "counter", `{}`); err != nil || res.Content != "|" {
			t.Errorf("after %s: counter = %q, %v; want a fresh instance", c.tool, res.Content, err)
		}
	}
	close(stop)
	bystander.Wait()
	if byFails > 0 || byCalls == 0 {
		t.Errorf("bystander session: %d of %d calls failed", byFails, byCalls)
	}

	// Sandbox: no files, no environment, no arguments, no sockets.
	res, err := call(t, s, snap, "files", `{}`)
	if err != nil || strings.Contains(res.Content, "root:") || !strings.Contains(res.Content, "entries: 0") || strings.Contains(res.Content, "read: ok") {
		t.Errorf("files: %q %v", res.Content, err)
	}
	res, err = call(t, s, snap, "env", `{}`)
	if err != nil || res.Content != "env: 0 vars; HOME=; args: 0" {
		t.Errorf("env: %q %v", res.Content, err)
	}
	res, err = call(t, s, snap, "socket", `{}`)
	if err != nil || !strings.HasPrefix(res.Content, "dial: ") || res.Content == "dial: ok" {
		t.Errorf("socket: %q %v", res.Content, err)
	}
	// Output is captured, tagged, bounded.
	if _, err := call(t, s, snap, "print", `{}`); err != nil {
		t.Fatal(err)
	}
	l := logs.String()
	if !strings.Contains(l, "plugin=hostile stream=stdout line=") || !strings.Contains(l, "plugin output truncated") {
		t.Errorf("plugin output not logged and bounded:\n%.2000s", l)
	}
	if n := strings.Count(l, "stream=stdout line="); n > 1000 || n < 100 {
		t.Errorf("%d stdout lines logged", n)
	}
	// Every instance above was restored from the snapshot (when on): the
	// containment held for restored instances.
	checkRestored(t, h)
}

// TestSessionIsolation: state lives in the session's instance, a new
// session starts fresh, Close closes.
func TestSessionIsolation(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools})
	h, _ := newHost(t, nil)
	a, b := h.NewSession(), h.NewSession()
	for i, want := range []string{"|", "||", "|||"} {
		if res, _ := call(t, a, snap, "counter", `{}`); res.Content != want {
			t.Fatalf("a call %d: %q", i, res.Content)
		}
	}
	if res, _ := call(t, b, snap, "counter", `{}`); res.Content != "|" {
		t.Fatalf("b sees a's state: %q", res.Content)
	}
	a.Close(context.Background())
	if _, err := call(t, a, snap, "counter", `{}`); err == nil {
		t.Fatal("a closed session still calls")
	}
	// Concurrent calls on one session's instance are serialised.
	c := h.NewSession()
	defer c.Close(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := call(t, c, snap, "counter", `{}`); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if res, _ := call(t, c, snap, "counter", `{}`); res.Content != strings.Repeat("|", 17) {
		t.Fatalf("after 16 concurrent calls: %q (want 17 bars)", res.Content)
	}
	if c.Instances() != 1 {
		t.Fatalf("instances = %d", c.Instances())
	}
}

// TestBadModules: each is refused with a clear error, before its code runs
// where that is possible.
func TestBadModules(t *testing.T) {
	good := module(t, "hostile")
	command := buildCommand(t, "testdata/plugins/hostile")
	snap := writePlugins(t,
		spec{name: "abi2", module: module(t, "abi2"), tools: []string{"a2"}},
		spec{name: "noabi", module: module(t, "noabi"), tools: []string{"na"}},
		spec{name: "badbuf", module: module(t, "badbuf"), tools: []string{"bb"}},
		spec{name: "truncated", module: good[:len(good)/2], tools: []string{"tr"}},
		spec{name: "tampered", module: good, sha: strings.Repeat("ab", 32), tools: []string{"ta"}},
		spec{name: "command", module: command, tools: []string{"cm"}},
		spec{name: "garbage", module: []byte("this is not wasm"), tools: []string{"ga"}},
	)
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	for tool, want := range map[string]string{
		"a2": "speaks ABI version 2; this host speaks 1",
		"na": "does not export toolshed_abi_version",
		"bb": "toolshed_request_buffer returned 0xfffff000+8192, outside the module's memory",
		"tr": "is not valid WebAssembly",
		"ta": "the manifest pins abababab",
		"cm": "exports _start",
		"ga": "is not valid WebAssembly",
	} {
		_, err := call(t, s, snap, tool, `{}`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tool, err, want)
		}
	}
}

// buildCommand builds a module as a command (with _start), not a reactor.
func buildCommand(t *testing.T, dir string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cmd.wasm")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestArgumentsValidated: arguments that break the schema never reach the
// plugin; the model gets a readable tool error.
func TestArgumentsValidated(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{Dir: "../../plugins/textkit", Manifest: "../../plugin-manifests/textkit.json"})
	for args, want := range map[string]string{
		`{"text": 5}`:     "got number, want string",
		`{}`:              "missing property 'text'",
		`not json`:        "not valid JSON",
		`{"text": "a"} x`: "not valid JSON",
	} {
		res, err := p.CallErr("slugify", json.RawMessage(args))
		if err != nil || !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %+v %v, want a tool error with %q", args, res, err, want)
		}
	}
	if p.Session.Instances() != 0 {
		t.Error("an instance was made for calls that never ran")
	}
}

// TestRequestBufferAndAlloc: a request that fits the module's request
// buffer and one that does not (it goes through toolshed_alloc) are served
// alike, one after the other on one instance.
func TestRequestBufferAndAlloc(t *testing.T) {
	p := plugintest.New(t, plugintest.Config{Dir: "../../plugins/textkit", Manifest: "../../plugin-manifests/textkit.json"})
	for _, n := range []int{10, 40 << 10, 10, 100 << 10, 20} {
		text := strings.Repeat("ab ", n/3)
		res := p.Call("textStats", map[string]any{"text": text})
		want := fmt.Sprintf(`"bytes":%d,`, len(text))
		if res.IsError || !strings.Contains(string(res.Structured), want) {
			t.Fatalf("%d bytes: %+v, want %s", len(text), res, want)
		}
	}
	if p.Session.Instances() != 1 {
		t.Errorf("instances = %d, want 1", p.Session.Instances())
	}
}

type echoSQL struct{}

func (echoSQL) QuerySQL(ctx context.Context, db string, req abi.SQLRequest) (*abi.SQLReply, error) {
	return &abi.SQLReply{Columns: []string{"db", "sql", "params"}, Rows: [][]any{{db, req.SQL, len(req.Params)}}}, nil
}

func TestCapabilities(t *testing.T) {
	mount := t.TempDir()
	os.WriteFile(filepath.Join(mount, "terms.txt"), []byte("GMV: gross merchandise value"), 0o644)
	os.Mkdir(filepath.Join(mount, "sub"), 0o755)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("do not read"), 0o644)
	os.Symlink(secret, filepath.Join(mount, "escape.txt"))

	var hits int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://example.invalid/x", http.StatusFound)
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 5000))
		default:
			fmt.Fprint(w, `{"temp": 21}`)
		}
	}))
	defer srv.Close()

	manifest := filepath.Join(t.TempDir(), "caps.json")
	os.WriteFile(manifest, []byte(`{"name": "caps", "version": "1.0.0", "abi_version": 1, "wasm": "caps.wasm", "sha256": "`+strings.Repeat("0", 64)+`",
		"capabilities": {"log": true, "config": ["api.key", "region"], "mounts": ["glossary"], "http": ["*"], "sql": true},
		"tools": [`+toolList("log", "config", "read", "list", "fetch", "query", "panics")+`]}`), 0o644)

	denied := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest})
	for tool, args := range map[string]string{"log": `{}`, "config": `{"key": "region"}`,
		"read": `{"mount": "glossary", "path": "terms.txt"}`, "fetch": `{"url": "` + srv.URL + `"}`, "query": `{"sql": "select 1"}`} {
		res := denied.Call(tool, json.RawMessage(args))
		if !res.IsError || !strings.Contains(res.Content, "is not granted") {
			t.Errorf("ungranted %s: %+v", tool, res)
		}
	}

	logs := &logBuffer{}
	p := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		SQL:    echoSQL{},
		Grants: wasm.Grants{
			Log:    true,
			Config: map[string]string{"region": "cn-north", "other": "not requested"},
			Mounts: map[string]string{"glossary": mount},
			HTTP:   wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true, MaxResponseBytes: 1000},
			SQL:    "analytics",
		}})
	expect := func(tool, args string, isErr bool, want string) {
		t.Helper()
		res := p.Call(tool, json.RawMessage(args))
		if res.IsError != isErr || !strings.Contains(res.Content, want) {
			t.Errorf("%s %s: %+v, want error=%v and %q", tool, args, res, isErr, want)
		}
	}
	expect("log", `{}`, false, "logged")
	if !strings.Contains(logs.String(), `plugin=caps message="hello from caps"`) {
		t.Errorf("plugin log line missing:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "granted=") || !strings.Contains(logs.String(), "denied=config.api.key") {
		t.Errorf("effective capabilities not logged:\n%s", logs.String())
	}
	expect("config", `{"key": "region"}`, false, "cn-north")
	expect("config", `{"key": "other"}`, true, `"config.other" is not granted`)
	expect("config", `{"key": "api.key"}`, true, `"config.api.key" is not granted`)
	expect("read", `{"mount": "glossary", "path": "terms.txt"}`, false, "gross merchandise value")
	expect("read", `{"mount": "glossary", "path": "/terms.txt"}`, false, "gross merchandise value")
	expect("read", `{"mount": "glossary", "path": "../../secret.txt"}`, true, "no such file")
	expect("read", `{"mount": "glossary", "path": "escape.txt"}`, true, "")
	expect("read", `{"mount": "other", "path": "x"}`, true, `"mounts.other" is not granted`)
	expect("list", `{"mount": "glossary", "path": "."}`, false, "escape.txt,sub,terms.txt")
	expect("fetch", `{"url": "`+srv.URL+`/weather"}`, false, `"status":200`)
	expect("fetch", `{"url": "`+srv.URL+`/big"}`, false, `"truncated":true`)
	expect("fetch", `{"url": "`+srv.URL+`/redirect"}`, true, "origin not allowed")
	expect("fetch", `{"url": "http://example.invalid/"}`, true, "is not allowed")
	expect("fetch", `{"url": "file:///etc/passwd"}`, true, "not an http(s) URL")
	expect("query", `{"sql": "select 1"}`, false, `"rows":[["analytics","select 1",2]]`)
	expect("panics", `{}`, true, "plugin panicked")
	if strings.Contains(p.Call("read", json.RawMessage(`{"mount": "glossary", "path": "escape.txt"}`)).Content, "do not read") {
		t.Error("a symlink escaped the mount")
	}

	// Private addresses are refused unless the operator allows them.
	strict := plugintest.New(t, plugintest.Config{Dir: "testdata/plugins/caps", Manifest: manifest,
		Grants: wasm.Grants{HTTP: wasm.HTTPGrant{Allow: []string{srv.URL}}}})
	res := strict.Call("fetch", json.RawMessage(`{"url": "`+srv.URL+`"}`))
	if !res.IsError || !strings.Contains(res.Content, "refused") {
		t.Errorf("private address: %+v", res)
	}
}

func toolList(names ...string) string {
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf(`{"name": %q, "description": "caps %s", "parameters": {"type": "object"}}`, n, n))
	}
	return strings.Join(out, ",")
}

// TestOneCompileManySessions: many sessions asking at once compile once.
func TestOneCompileManySessions(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools})
	h, logs := newHost(t, &wasm.Options{CacheDir: "off", PoolSize: 2})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.NewSession()
			defer s.Close(context.Background())
			if res, err := call(t, s, snap, "counter", `{}`); err != nil || res.Content != "|" {
				t.Errorf("counter: %q %v", res.Content, err)
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(logs.String(), `msg="plugin compiled"`); n != 1 {
		t.Fatalf("compiled %d times", n)
	}
	st := h.Stats()
	if st.Compiles != 1 || st.CompileFailures != 0 || st.CompileTime <= 0 {
		t.Errorf("stats: %+v, want one compile", st)
	}
	// Every session took one fresh instance, from the pool or made then.
	if st.PoolHits+st.PoolMisses != 20 || st.Instantiations < st.PoolMisses || st.InstantiateFailures != 0 {
		t.Errorf("stats: %+v, want 20 first calls", st)
	}
}

// TestPoolGivesFreshInstances: pooled instances are never used before.
func TestPoolGivesFreshInstances(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools})
	h, _ := newHost(t, &wasm.Options{PoolSize: 3})
	tl, _ := snap.Tool("counter")
	pl, err := h.Plugin(tl.Plugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		s := h.NewSession()
		for j := 1; j <= 2; j++ {
			if res, _ := call(t, s, snap, "counter", `{}`); res.Content != strings.Repeat("|", j) {
				t.Fatalf("session %d call %d: %q", i, j, res.Content)
			}
		}
		s.Close(context.Background())
	}
}

// TestPrepare: discovery readies the session's instance in the background.
func TestPrepare(t *testing.T) {
	snap := writePlugins(t, spec{name: "hostile", module: module(t, "hostile"), tools: hostileTools})
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	tl, _ := snap.Tool("counter")
	s.Prepare(tl.Plugin)
	deadline := time.Now().Add(30 * time.Second)
	for s.Instances() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.Instances() != 1 {
		t.Fatal("Prepare readied no instance")
	}
	if res, err := call(t, s, snap, "counter", `{}`); err != nil || res.Content != "|" {
		t.Fatalf("first call after Prepare: %q %v", res.Content, err)
	}
}
