package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/plugintest"
)

// goExtism is testdata/extism/goplugin built: an Extism plugin written in
// Go against the extism:host/env imports, one export per case.
func goExtism(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(plugintest.Build(t, "testdata/extism/goplugin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goExtismTools are its exports as tools taking {"text": "..."} as
// their input text.
func goExtismTools(exports ...string) string {
	var ts []string
	for _, e := range exports {
		ts = append(ts, fmt.Sprintf(`{"name": %q, "description": "export %s", "export": %q, "input": "text:text",
			"parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}`, e, e, e))
	}
	return "[" + strings.Join(ts, ",") + "]"
}

var goExtismExports = []string{"greet", "counter", "config", "fetch", "sleep", "storm", "churn", "hold_then_grow", "logs",
	"oob", "wild", "freetwice", "badoutput", "erroring", "exitcode", "freedoutput", "varflood", "inputgone"}

func goExtismSnap(t testing.TB, extra string) *catalog.Snapshot {
	return writeExtism(t, extismPlugin{name: "gox", module: goExtism(t), tools: goExtismTools(goExtismExports...), extra: extra})
}

func callText(t testing.TB, s *wasm.Session, snap *catalog.Snapshot, tool, text string) (string, bool, error) {
	t.Helper()
	res, err := call(t, s, snap, tool, fmt.Sprintf(`{"text": %q}`, text))
	return res.Content, res.IsError, err
}

func TestExtismOwnPlugin(t *testing.T) {
	snap := goExtismSnap(t, "")
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	for _, c := range []struct {
		tool, in, want string
		isErr          bool
	}{
		{"greet", "Ada", "Hello, Ada!", false},
		{"erroring", "today", "no luck: today", true},
		{"exitcode", "", "exitcode returned 7", true},
		// Freeing twice, or what is no block, is ignored as by Extism's
		// kernel; the length of what is no block's start is 0.
		{"freetwice", "", "lengths 0 0 0", false},
		{"churn", "4096", "churned", false},
		{"config", "anything", "<unset>", false},
	} {
		out, isErr, err := callText(t, s, snap, c.tool, c.in)
		if err != nil || isErr != c.isErr || out != c.want {
			t.Errorf("%s(%q) = %q (tool error %v), %v; want %q (tool error %v)", c.tool, c.in, out, isErr, err, c.want, c.isErr)
		}
	}
}

// TestExtismVarsPerSession: vars persist across the calls of a session
// and never cross into another.
func TestExtismVarsPerSession(t *testing.T) {
	snap := goExtismSnap(t, "")
	h, _ := newHost(t, nil)
	a, b := h.NewSession(), h.NewSession()
	defer b.Close(context.Background())
	for i := 1; i <= 3; i++ {
		if out, _, err := callText(t, a, snap, "counter", ""); err != nil || out != fmt.Sprint(i) {
			t.Fatalf("session a call %d: %q, %v", i, out, err)
		}
	}
	if out, _, err := callText(t, b, snap, "counter", ""); err != nil || out != "1" {
		t.Fatalf("session b sees a's var: %q, %v", out, err)
	}
	a.Close(context.Background())
	c := h.NewSession()
	defer c.Close(context.Background())
	if out, _, err := callText(t, c, snap, "counter", ""); err != nil || out != "1" {
		t.Fatalf("a new session after a closed one sees its var: %q, %v", out, err)
	}
	// On Linux the instances were restored from the plugin's snapshot:
	// vars are the host's, never in the image.
	if runtime.GOOS == "linux" && os.Getenv("TOOLSHED_WASM_SNAPSHOTS") != "off" {
		if st := h.Stats(); st.Snapshots != 1 || st.Restores == 0 {
			t.Errorf("an Extism Go plugin was not snapshotted: %+v", st)
		}
	}
}

// TestExtismConfig: config_get sees the keys the manifest requests and
// the operator grants, nothing else.
func TestExtismConfig(t *testing.T) {
	snap := goExtismSnap(t, `"capabilities": {"config": ["region", "asked"]}`)
	h, _ := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"gox": {Config: map[string]string{"region": "eu-west", "secret": "s3cr3t"}}}})
	s := h.NewSession()
	defer s.Close(context.Background())
	for key, want := range map[string]string{"region": "eu-west", "asked": "<unset>", "secret": "<unset>"} {
		if out, _, err := callText(t, s, snap, "config", key); err != nil || out != want {
			t.Errorf("config %q = %q, %v; want %q", key, out, err, want)
		}
	}
}

// TestExtismHTTP: http_request goes through the http capability: granted
// origins only, private addresses only when allowed, redirects checked
// again; a refusal is a tool error that says why.
func TestExtismHTTP(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "elsewhere") }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/big":
			w.Write(make([]byte, 4096))
		default:
			fmt.Fprintf(w, "hi %s", r.Header.Get("X-Test"))
		}
	}))
	defer srv.Close()
	snap := goExtismSnap(t, `"capabilities": {"http": ["*"]}`)
	grant := func(g wasm.HTTPGrant) *wasm.Options {
		return &wasm.Options{Grants: map[string]wasm.Grants{"gox": {HTTP: g}}}
	}
	for _, c := range []struct {
		name  string
		opts  *wasm.Options
		url   string
		want  string
		isErr bool
	}{
		{"granted", grant(wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true}), srv.URL + "/", "200 hi 1", false},
		{"not granted", nil, srv.URL + "/", `capability "http" is not granted`, true},
		{"other origin", grant(wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true}), other.URL + "/", "is not allowed", true},
		{"private refused", grant(wasm.HTTPGrant{Allow: []string{srv.URL}}), srv.URL + "/", "private, loopback or link-local: refused", true},
		{"redirect to a refused origin", grant(wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true}), srv.URL + "/away", "origin not allowed", true},
		{"too large", grant(wasm.HTTPGrant{Allow: []string{srv.URL}, AllowPrivate: true, MaxResponseBytes: 1024}), srv.URL + "/big", "larger than the 1024 bytes", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newHost(t, c.opts)
			s := h.NewSession()
			defer s.Close(context.Background())
			out, isErr, err := callText(t, s, snap, "fetch", c.url)
			if err != nil || isErr != c.isErr || !strings.Contains(out, c.want) {
				t.Fatalf("fetch %s = %q (tool error %v), %v; want %q", c.url, out, isErr, err, c.want)
			}
			// The session goes on (a refusal discards the instance only).
			if out, _, err := callText(t, s, snap, "greet", "again"); err != nil || out != "Hello, again!" {
				t.Fatalf("after: %q, %v", out, err)
			}
		})
	}
}

// TestExtismDeadline: a plugin sleeping past its deadline is stopped at
// it, and a bystander session is served meanwhile.
func TestExtismDeadline(t *testing.T) {
	snap := goExtismSnap(t, `"limits": {"timeout_ms": 300}`)
	h, _ := newHost(t, nil)
	s, by := h.NewSession(), h.NewSession()
	defer s.Close(context.Background())
	defer by.Close(context.Background())
	var wg sync.WaitGroup
	var sleepErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, sleepErr = callText(t, s, snap, "sleep", "")
	}()
	if out, _, err := callText(t, by, snap, "greet", "bystander"); err != nil || out != "Hello, bystander!" {
		t.Fatalf("bystander: %q, %v", out, err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // an hour's sleep, were it not stopped
		t.Fatal("the sleep was not stopped at its deadline")
	}
	var ce *wasm.CallError
	if !errors.As(sleepErr, &ce) || !errors.Is(sleepErr, context.DeadlineExceeded) {
		t.Fatalf("sleep: %v; want a CallError that timed out", sleepErr)
	}
	if out, _, err := callText(t, s, snap, "greet", "after"); err != nil || out != "Hello, after!" {
		t.Fatalf("after the timeout: %q, %v", out, err)
	}
}

// TestExtismMemoryCap: host-side blocks count against the plugin's memory
// limit with its linear memory: a storm of blocks, one block larger than
// the limit, and blocks held while the linear memory grows are all
// stopped at the cap; the budget gets every byte back.
func TestExtismMemoryCap(t *testing.T) {
	snap := goExtismSnap(t, `"limits": {"max_memory_mb": 48, "timeout_ms": 120000}`) // the cap, not the deadline, must stop them
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	for _, c := range []struct{ tool, in string }{
		{"storm", fmt.Sprint(8 << 20)},
		{"storm", fmt.Sprint(int64(1) << 40)},
		{"storm", "0"}, // empty blocks count too
		{"hold_then_grow", "30"},
	} {
		s := h.NewSession()
		_, _, err := callText(t, s, snap, c.tool, c.in)
		var ce *wasm.CallError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "48 MiB") {
			t.Errorf("%s(%s): %v; want a CallError: out of memory at 48 MiB", c.tool, c.in, err)
		}
		if out, _, err := callText(t, s, snap, "greet", "x"); err != nil || out != "Hello, x!" {
			t.Errorf("after %s: %q, %v", c.tool, out, err)
		}
		s.Close(context.Background())
	}
	// Within the cap, the same plugin holds blocks and grows.
	s := h.NewSession()
	if out, _, err := callText(t, s, snap, "hold_then_grow", "4"); err != nil || out != "grew 6" {
		t.Errorf("hold_then_grow within the cap: %q, %v", out, err)
	}
	s.Close(context.Background())
	if used := h.MemoryStats().Used; used != 0 {
		t.Errorf("%d bytes still charged to the budget with every session closed", used)
	}
}

// TestExtismHostilePointers: addresses and lengths that are not the
// plugin's end the call with an error naming them; the host and the
// session go on.
func TestExtismHostilePointers(t *testing.T) {
	snap := goExtismSnap(t, "")
	h, _ := newHost(t, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	for tool, want := range map[string]string{
		"oob":         "load_u8: 1 bytes at",
		"wild":        "load_u8: 0x7777000000000003 is not the address of a live block",
		"badoutput":   "output_set: 1048576 bytes at",
		"freedoutput": "output_set: the output's block at 0x2000000000000 was freed before the call returned",
		"varflood":    "var_set: the plugin's vars would hold",
		"inputgone":   "input_load_u8: 0x1000000000000 is not the address of a live block",
	} {
		_, _, err := callText(t, s, snap, tool, "some input")
		var ce *wasm.CallError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a CallError containing %q", tool, err, want)
		}
		if out, _, err := callText(t, s, snap, "greet", tool); err != nil || out != "Hello, "+tool+"!" {
			t.Errorf("after %s: %q, %v", tool, out, err)
		}
	}
}

// TestExtismLogQuota: a plugin logging without end has its messages
// dropped past the call's log quota; the call ends normally and the
// host log holds at most the quota.
func TestExtismLogQuota(t *testing.T) {
	snap := goExtismSnap(t, `"capabilities": {"log": true}`)
	h, logs := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"gox": {Log: true}}, Caps: wasm.Caps{MaxLogLines: 10}})
	s := h.NewSession()
	defer s.Close(context.Background())
	if out, _, err := callText(t, s, snap, "logs", "5000"); err != nil || out != "logged" {
		t.Fatalf("logs: %q, %v", out, err)
	}
	if n := strings.Count(logs.String(), `msg="plugin log"`); n != 10 {
		t.Errorf("%d plugin log lines; want the quota's 10", n)
	}
	if !strings.Contains(logs.String(), "dropped=4990") {
		t.Errorf("the drop is not reported:\n%s", logs.String())
	}
	// Not granted: nothing reaches the log.
	h2, logs2 := newHost(t, nil)
	s2 := h2.NewSession()
	defer s2.Close(context.Background())
	if out, _, err := callText(t, s2, snap, "logs", "3"); err != nil || out != "logged" {
		t.Fatalf("logs, not granted: %q, %v", out, err)
	}
	if strings.Contains(logs2.String(), `msg="plugin log"`) {
		t.Error("a plugin not granted log wrote to the host log")
	}
}

// TestExtismServletArtifactQuota: a servlet returning thirty images is
// held to the artifact quota like any plugin: the first ones are stored,
// the rest are said to be left out.
func TestExtismServletArtifactQuota(t *testing.T) {
	snap := writeExtism(t, extismPlugin{name: "servlet", module: goExtism(t), extra: `"servlet": true, "capabilities": {"artifacts": true}, "limits": {"timeout_ms": 120000}`,
		tools: `[{"name": "flood", "description": "thirty pictures"}, {"name": "shout", "description": "shout",
			"parameters": {"type": "object", "properties": {"message": {"type": "string"}}}}]`})
	dir := t.TempDir()
	h, _ := newHost(t, &wasm.Options{Caps: wasm.Caps{MaxArtifacts: 4},
		Grants: map[string]wasm.Grants{"servlet": {Artifacts: dir}}})
	s := h.NewSession()
	defer s.Close(context.Background())
	tool, _ := snap.Tool("flood")
	res, err := s.CallResult(context.Background(), tool, []byte(`{}`))
	if err != nil || res.IsError {
		t.Fatalf("flood: %+v, %v", res.Result, err)
	}
	files, _ := os.ReadDir(dir)
	if len(res.Artifacts) != 4 || len(files) != 4 {
		t.Fatalf("%d artifacts returned, %d files stored; want the quota's 4", len(res.Artifacts), len(files))
	}
	if n := strings.Count(res.Content, "stored as artifact"); n != 4 {
		t.Errorf("%d lines say stored:\n%s", n, res.Content)
	}
	if n := strings.Count(res.Content, "left out"); n != 26 {
		t.Errorf("%d lines say left out:\n%s", n, res.Content)
	}
	if out, _, err := callText(t, s, snap, "shout", ""); err != nil || out != "" {
		t.Errorf("shout after the flood: %q, %v", out, err)
	}
}

// cExtism builds testdata/extism/cplugin, an Extism plugin in
// freestanding C (clang, no libc). Without clang the test is skipped, or
// fails under CI (.ci/run installs it).
func cExtism(t *testing.T) []byte {
	t.Helper()
	clang, err := exec.LookPath("clang")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("no clang: the C Extism fixture is not built")
		}
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "cplugin.wasm")
	cmd := exec.Command(clang, "--target=wasm32", "-O2", "-nostdlib", "-Wall", "-Wextra", "-Werror", "-Wl,--no-entry",
		"-o", out, "testdata/extism/cplugin/plugin.c")
	if msg, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && bytes.Contains(msg, []byte("wasm-ld")) {
			t.Skipf("clang cannot link WebAssembly here: %s", msg)
		}
		t.Fatalf("clang: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExtismCPlugin: the C fixture's exports, vars per session, config
// granted and not.
func TestExtismCPlugin(t *testing.T) {
	tools := goExtismTools("reverse", "count", "cfg", "no")
	snap := writeExtism(t, extismPlugin{name: "cx", module: cExtism(t), tools: tools, extra: `"capabilities": {"config": ["colour"]}`})
	h, _ := newHost(t, &wasm.Options{Grants: map[string]wasm.Grants{"cx": {Config: map[string]string{"colour": "teal", "other": "x"}}}})
	a, b := h.NewSession(), h.NewSession()
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	for _, c := range []struct {
		s              *wasm.Session
		tool, in, want string
		isErr          bool
	}{
		{a, "reverse", "stressed", "desserts", false},
		{a, "count", "", "1", false},
		{a, "count", "", "2", false},
		{b, "count", "", "1", false},
		{a, "count", "", "3", false},
		{a, "cfg", "colour", "teal", false},
		{a, "cfg", "other", "<unset>", false},
		{a, "no", "", "c says no", true},
	} {
		out, isErr, err := callText(t, c.s, snap, c.tool, c.in)
		if err != nil || isErr != c.isErr || out != c.want {
			t.Errorf("%s(%q) = %q (tool error %v), %v; want %q", c.tool, c.in, out, isErr, err, c.want)
		}
	}
}
