package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/builtin"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	scriptedmodel "github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// scripted is the scripted model (internal/scripted) on 127.0.0.1.
type scripted = scriptedmodel.Model

func toolCall(id, name, args string) openai.ChatCompletionMessage {
	return scriptedmodel.ToolCall(id, name, args)
}

func textkitCatalog(t testing.TB) *catalog.Snapshot {
	t.Helper()
	dir := t.TempDir()
	module, err := os.ReadFile(wasmbuild.Build(t, "../plugins/textkit"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "textkit.wasm"), module, 0o644)
	man, _ := os.ReadFile("../plugin-manifests/textkit.json")
	os.WriteFile(filepath.Join(dir, "textkit.json"), man, 0o644)
	for _, f := range []string{"sql.json", "chart.json", "calculate.json"} { // deferred tools without modules
		b, _ := os.ReadFile(filepath.Join("../plugin-manifests", f))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	snap, err := catalog.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Pin the freshly built module.
	tl, _ := snap.Tool("slugify")
	pinned := strings.Replace(string(man), tl.Plugin.Manifest.SHA256, sha(module), 1)
	os.WriteFile(filepath.Join(dir, "textkit.json"), []byte(pinned), 0o644)
	snap, _ = catalog.Load(dir, nil)
	if len(snap.Errors) > 0 {
		t.Fatal(snap.Errors)
	}
	return snap
}

func newHost(t testing.TB, model *scripted, opts host.Options) (*host.Host, *catalog.Snapshot) {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = srv.URL + "/v1"
	snap := textkitCatalog(t)
	rt, err := wasm.New(&wasm.Options{CacheDir: filepath.Join(os.TempDir(), "toolshed-test-cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	opts.Client, opts.Model, opts.Runtime = openai.NewClientWithConfig(cfg), "scripted", rt
	opts.Catalog = func() *catalog.Snapshot { return snap }
	opts.Tools = append(opts.Tools, host.GoTool{Name: "get_time", Description: "The current time.",
		Call: func(context.Context, json.RawMessage) (host.Result, error) { return host.Result{Content: "12:00"}, nil }})
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, snap
}

func ask(t testing.TB, h *host.Host, prompt string) *host.Response {
	t.Helper()
	resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: "user", Content: prompt}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestRoundToolLists checks what goes over the wire: round 1 carries the
// always-on tools and tool_search only; after tool_search the found tools
// join; they stay; the next request starts without them.
func TestRoundToolLists(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	resp := ask(t, h, `use slugify with {"text":"Tool_Search_Rocks"} to url-slug`)
	if resp.Answer != "answer: tool-search-rocks" {
		t.Fatalf("answer %q", resp.Answer)
	}
	sent := model.ToolsSent()
	base := []string{"get_time", "tool_search"}
	if len(sent) != 3 || !reflect.DeepEqual(sent[0], base) {
		t.Fatalf("round 1 sent %v", sent)
	}
	if !contains(sent[1], "slugify") || !reflect.DeepEqual(sent[1][:2], base) {
		t.Fatalf("round 2 sent %v", sent[1])
	}
	if !reflect.DeepEqual(sent[2], sent[1]) {
		t.Fatalf("round 3 sent %v, want the same list as round 2 %v", sent[2], sent[1])
	}
	if !reflect.DeepEqual(resp.Discovered, sent[1][2:]) {
		t.Fatalf("discovered %v vs sent %v", resp.Discovered, sent[1])
	}
	// Telemetry: tokens of the definitions sent, against sending everything.
	r1, r2 := resp.Rounds[0], resp.Rounds[1]
	if r1.ToolTokens <= 0 || r2.ToolTokens <= r1.ToolTokens || r2.AllToolsTokens <= r2.ToolTokens || r1.AllToolsTokens != r2.AllToolsTokens {
		t.Fatalf("tokens: round 1 %d, round 2 %d, all %d", r1.ToolTokens, r2.ToolTokens, r2.AllToolsTokens)
	}
	if r1.ToolCalls[0].Search == nil || r1.ToolCalls[0].Search.Path != "keyword" {
		t.Fatalf("search record %+v", r1.ToolCalls[0].Search)
	}
	// A new request starts from scratch.
	ask(t, h, `use get_time with {} to nothing-at-all-xyz`)
	if sent := model.ToolsSent(); !reflect.DeepEqual(sent[3], base) {
		t.Fatalf("second request, round 1 sent %v", sent[3])
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestUndiscoveredToolRefused: a deferred tool called before tool_search
// found it gets a tool error that points at tool_search.
func TestUndiscoveredToolRefused(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	// The query finds nothing useful for textStats, so calling it is premature.
	resp := ask(t, h, `use textStats with {"text":"a"} to zzzz-nothing`)
	if !strings.Contains(resp.Answer, "is not available yet. Call tool_search first") {
		t.Fatalf("answer %q", resp.Answer)
	}
	resp = ask(t, h, `use noSuchTool with {} to zzzz-nothing`)
	if !strings.Contains(resp.Answer, `there is no tool "noSuchTool"`) {
		t.Fatalf("answer %q", resp.Answer)
	}
	// With AutoDiscover the call goes through.
	h2, _ := newHost(t, &scripted{}, host.Options{AutoDiscover: true})
	resp = ask(t, h2, `use slugify with {"text":"A_B"} to zzzz-nothing`)
	if resp.Answer != "answer: a-b" {
		t.Fatalf("auto-discover answer %q", resp.Answer)
	}
}

func TestBadArgumentsReachTheModel(t *testing.T) {
	h, _ := newHost(t, &scripted{}, host.Options{})
	resp := ask(t, h, `use slugify with {"title":1} to url-slug`)
	if !strings.Contains(resp.Answer, "missing property 'text'") {
		t.Fatalf("answer %q", resp.Answer)
	}
}

// TestLLMSelection: in HYBRID mode an empty keyword result asks the
// selection model, whose answer is parsed tolerantly and kept to the pool.
func TestLLMSelection(t *testing.T) {
	model := &scripted{Choose: "Sure! ```json\n{\"tools\": [\"slugify\", \"madeUpTool\"]}\n```"}
	h, _ := newHost(t, model, host.Options{})
	resp := ask(t, h, `use slugify with {"text":"X_Y"} to qqqq-zzzz`)
	if resp.Answer != "answer: x-y" || !reflect.DeepEqual(resp.Discovered, []string{"slugify"}) {
		t.Fatalf("answer %q discovered %v", resp.Answer, resp.Discovered)
	}
	rec := resp.Rounds[0].ToolCalls[0].Search
	if rec == nil || rec.Path != "llm" || !reflect.DeepEqual(rec.Found, []string{"slugify"}) {
		t.Fatalf("search record %+v", rec)
	}
	// The selection request carried no tools and a compact candidate list.
	sel := model.Requests()[1]
	if len(sel.Tools) != 0 || !strings.Contains(sel.Messages[1].Content, "slugify: Turn a title into a URL slug") {
		t.Fatalf("selection request %+v", sel)
	}
}

// TestConcurrentRequestsIsolated: many requests with different discoveries
// at once; none sees another's tools (run with -race).
func TestConcurrentRequestsIsolated(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			prompt, want := `use slugify with {"text":"a"} to url-slug`, "slugify"
			if i%2 == 1 {
				prompt, want = `use textStats with {"text":"a"} to word-count`, "textStats"
			}
			resp, err := h.Run(context.Background(), []openai.ChatCompletionMessage{{Role: "user", Content: prompt}})
			if err != nil {
				t.Error(err)
				return
			}
			if !contains(resp.Discovered, want) || strings.HasPrefix(resp.Answer, "answer: tool") {
				t.Errorf("request %d: discovered %v answer %q", i, resp.Discovered, resp.Answer)
			}
			for _, d := range resp.Discovered {
				if (i%2 == 0 && d == "textStats") || (i%2 == 1 && d == "slugify") {
					t.Errorf("request %d leaked %s", i, d)
				}
			}
		}(i)
	}
	wg.Wait()
}

func sha(b []byte) string {
	return fmt.Sprintf("%x", sha256Sum(b))
}

func TestRunStream(t *testing.T) {
	model := &scripted{}
	h, _ := newHost(t, model, host.Options{})
	var events []host.Event
	resp, err := h.RunStream(context.Background(), []openai.ChatCompletionMessage{{Role: "user",
		Content: `use slugify with {"text":"Streaming_Works_Fine"} to url-slug`}}, func(e host.Event) { events = append(events, e) })
	if err != nil || resp.Answer != "answer: streaming-works-fine" {
		t.Fatalf("answer %q err %v", resp.Answer, err)
	}
	var kinds []string
	var text strings.Builder
	for _, e := range events {
		if e.Kind == host.EventText {
			text.WriteString(e.Text)
			continue
		}
		kinds = append(kinds, string(e.Kind))
	}
	want := "round tool_call tool_result round tool_call tool_result round"
	if strings.Join(kinds, " ") != want || text.String() != resp.Answer {
		t.Fatalf("events %v text %q", kinds, text.String())
	}
	if sent := model.ToolsSent(); !contains(sent[1], "slugify") || contains(sent[0], "slugify") {
		t.Fatalf("tools sent %v", sent)
	}
}

func TestStreamCutIsAnError(t *testing.T) {
	model := &scripted{Cut: true}
	h, _ := newHost(t, model, host.Options{AutoDiscover: true})
	done := make(chan error, 1)
	go func() {
		_, err := h.RunStream(context.Background(), []openai.ChatCompletionMessage{{Role: "user",
			Content: `use slugify with {"text":"a_b_c_d_e"} to zzzz-none`}}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stream") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cut stream hung the request")
	}
}

func TestTodoIsPerRequest(t *testing.T) {
	h, _ := newHost(t, &scripted{}, host.Options{Tools: []host.GoTool{builtin.Todo()}})
	resp := ask(t, h, `use todo_write with {"todos":[{"content":"query","status":"completed"},{"content":"chart","status":"pending"}]} to zzzz-none`)
	if resp.Answer != "answer: [x] query\n[ ] chart\n1 of 2 done" {
		t.Fatalf("answer %q", resp.Answer)
	}
	if got := resp.Rounds[0].Tools; strings.Join(got, ",") != "todo_write,get_time,tool_search" {
		t.Fatalf("tools %v", got)
	}
}

// TestPluginDirOption: the embedding shortcut loads the directory and makes
// its own runtime.
func TestPluginDirOption(t *testing.T) {
	snap := textkitCatalog(t)
	srv := httptest.NewServer(&scripted{})
	defer srv.Close()
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	h, err := host.New(host.Options{Client: openai.NewClientWithConfig(cfg), Model: "m", PluginDir: snap.Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if resp := ask(t, h, `use slugify with {"text":"Dir_Option"} to url-slug`); resp.Answer != "answer: dir-option" {
		t.Fatalf("answer %q", resp.Answer)
	}
	if _, err := host.New(host.Options{Client: openai.NewClientWithConfig(cfg), Model: "m", PluginDir: "/nonexistent"}); err == nil {
		t.Fatal("a missing plugin directory was accepted")
	}

	// The embedder's own tool names are reserved: a plugin tool named
	// like one (here a look-alike of slugify) does not enter the catalog.
	logs := &strings.Builder{}
	h2, err := host.New(host.Options{Client: openai.NewClientWithConfig(cfg), Model: "m", PluginDir: snap.Dir,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Tools: []host.GoTool{{Name: "s1ugify", Description: "The embedder's own.", Parameters: json.RawMessage(`{"type":"object"}`),
			Call: func(context.Context, json.RawMessage) (host.Result, error) {
				return host.Result{Content: "embedder"}, nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close(context.Background())
	if !strings.Contains(logs.String(), "plugin manifest skipped") || !strings.Contains(logs.String(), "s1ugify") {
		t.Fatalf("a plugin tool clashing with the embedder's was not refused; logs:\n%s", logs)
	}
}
