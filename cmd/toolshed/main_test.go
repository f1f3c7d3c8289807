package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

const bundled = "../../plugin-manifests"

func TestSearchJSON(t *testing.T) {
	code, out, errs := runCLI("search", "--plugins", builtCatalog(t), "--json", "--limit", "3", "查表结构")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Results []struct {
			Name, Plugin, Description string
			Score                     float64
			Matched                   []string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v.Results) == 0 || v.Results[0].Name != "describeTables" || v.Results[0].Plugin != "sql" ||
		v.Results[0].Score <= 0 || v.Results[0].Description == "" || len(v.Results[0].Matched) == 0 {
		t.Fatalf("results: %+v", v.Results)
	}
	// Flags after the query work too, and the text output names the tool.
	code, out, _ = runCLI("search", "生成图表", "--plugins", builtCatalog(t))
	if code != 0 || !strings.Contains(out, "createBarChart") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestSearchErrors(t *testing.T) {
	if code, _, _ := runCLI("search", "--plugins", builtCatalog(t)); code != 2 {
		t.Errorf("no query: exit %d", code)
	}
	if code, _, errs := runCLI("search", "--plugins", "/nonexistent", "x"); code != 1 || !strings.Contains(errs, "/nonexistent") {
		t.Errorf("bad dir: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI("search", "--plugins", builtCatalog(t), "--limit", "0", "x"); code != 1 || !strings.Contains(errs, "--limit") {
		t.Errorf("bad limit: exit %d, %s", code, errs)
	}
	if code, _, _ := runCLI("frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	code, out, _ := runCLI("search", "--plugins", builtCatalog(t), "xylophone")
	if code != 0 || !strings.Contains(out, "no tool matches") {
		t.Errorf("no result: exit %d, %q", code, out)
	}
}

func TestPluginsValidate(t *testing.T) {
	if code, out, errs := runCLI("plugins", "validate", builtCatalog(t)); code != 0 || !strings.Contains(out, "6 manifests, 14 tools: all valid") {
		t.Fatalf("bundled: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"name": "Bad Name", "version": "1", "abi_version": 9, "wasm": "/abs.wasm", "sha256": "x", "tools": []}`), 0o644)
	code, out, errs := runCLI("plugins", "validate", dir)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"bad.json: name:", "bad.json: version:", "bad.json: abi_version:", "bad.json: wasm:", "bad.json: sha256:", "bad.json: tools:"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "1 of 1 file failed") {
		t.Errorf("stderr: %s", errs)
	}
	empty := t.TempDir()
	if code, _, errs := runCLI("plugins", "validate", empty); code != 1 || !strings.Contains(errs, "no manifest") {
		t.Errorf("empty dir: exit %d %s", code, errs)
	}
}

func TestPluginsListJSON(t *testing.T) {
	code, out, errs := runCLI("plugins", "list", "--plugins", builtCatalog(t), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Plugins []struct {
			Name  string
			Tools []struct{ Name string }
		}
		Errors []any
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Plugins) != 6 || v.Plugins[0].Name != "calculate" || len(v.Errors) != 0 {
		t.Fatalf("list: %+v", v)
	}
}

func TestEvalJSON(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.jsonl")
	queries := filepath.Join(dir, "queries.jsonl")
	os.WriteFile(tools, []byte(`{"name": "getWeather", "description": "Get the weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}}
{"name": "sendEmail", "description": "Send an email", "extra": "ignored"}
`), 0o644)
	os.WriteFile(queries, []byte(`{"query": "查天气", "tools": ["getWeather"]}
{"query": "email my boss", "tools": ["sendEmail"]}
`), 0o644)
	code, out, errs := runCLI("eval", "--tools", tools, "--queries", queries, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"recall", "hit", "all_found", "mrr", "index_ms", "query_us_p50", "query_us_p99", "per_query"} {
		if _, ok := v[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	var recall map[string]float64
	json.Unmarshal(v["recall"], &recall)
	if recall["1"] != 1 {
		t.Errorf("recall@1 = %v", recall["1"])
	}
	var per []struct{ Query, Expected, Got any }
	json.Unmarshal(v["per_query"], &per)
	if len(per) != 2 {
		t.Errorf("per_query: %s", v["per_query"])
	}
	code, out, _ = runCLI("eval", "--tools", tools, "--queries", queries, "--baseline")
	if code != 0 || !strings.Contains(out, "baseline-bm25") {
		t.Errorf("baseline table: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI("eval", "--tools", tools); code != 2 {
		t.Errorf("missing --queries: exit %d", code)
	}
	if code, _, errs := runCLI("eval", "--tools", tools, "--queries", queries, "--embed", "http://127.0.0.1:1/v1"); code != 2 || !strings.Contains(errs, "give --candidates") {
		t.Errorf("--embed without --candidates: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("eval", "--tools", tools, "--queries", queries, "--candidates", "100", "--embed", "http://127.0.0.1:1/v1"); code != 1 || !strings.Contains(errs, "--embed: embed: text-embedding-3-small") {
		t.Errorf("--embed with a dead endpoint: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("eval", "--tools", tools, "--queries", queries, "--weights", `{"Overlapp":1}`); code != 1 || !strings.Contains(errs, `unknown field "Overlapp"`) {
		t.Errorf("a misspelt weight: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("eval", "--tools", tools, "--queries", queries, "--half", "train"); code != 1 || !strings.Contains(errs, "want tune, test or all") {
		t.Errorf("an unknown half: exit %d, %q", code, errs)
	}
}

func TestSearchExtraLexicon(t *testing.T) {
	lex := filepath.Join(t.TempDir(), "lex.txt")
	os.WriteFile(lex, []byte("紫微斗数\tbar chart\n"), 0o644)
	code, out, errs := runCLI("search", "--plugins", builtCatalog(t), "--lexicon", lex, "--json", "紫微斗数")
	if code != 0 || !strings.Contains(out, "createBarChart") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	os.WriteFile(lex, []byte("broken line\n"), 0o644)
	if code, _, errs := runCLI("search", "--plugins", builtCatalog(t), "--lexicon", lex, "x"); code != 1 || !strings.Contains(errs, "lex.txt:1") {
		t.Fatalf("bad lexicon: exit %d %s", code, errs)
	}
}

// textkitDir is a plugin directory holding the example plugin, freshly
// built, with its manifest not yet pinned; and the module's bytes.
func textkitDir(t testing.TB) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	module, err := os.ReadFile(wasmbuild.Build(t, "../../plugins/textkit"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "textkit.wasm"), module, 0o644)
	man, _ := os.ReadFile(filepath.Join(bundled, "textkit.json"))
	os.WriteFile(filepath.Join(dir, "textkit.json"), man, 0o644)
	return dir, module
}

// TestCall runs a tool through the real path: manifest → sha256 check →
// compile → instance → call.
func TestCall(t *testing.T) {
	dir, module := textkitDir(t)
	if code, out, errs := runCLI("plugins", "pin", filepath.Join(dir, "textkit.json")); code != 0 || !strings.Contains(out, "sha256") {
		t.Fatalf("pin: exit %d %s%s", code, out, errs)
	}
	cache := "--cache-dir=" + filepath.Join(t.TempDir(), "cache")
	code, out, errs := runCLI("call", "--plugins", dir, cache, "slugify", `{"text": "Tool Search!"}`)
	if code != 0 || out != "tool-search\n" {
		t.Fatalf("call: exit %d %q %s", code, out, errs)
	}
	code, out, _ = runCLI("call", "--plugins", dir, cache, "--json", "textStats", `{"text": "a b"}`)
	if code != 0 || !strings.Contains(out, `"structured":{"characters":3`) {
		t.Fatalf("call --json: exit %d %s", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"slugify", `{"text": "!!"}`}, 3, "the tool reported an error"},
		{[]string{"slugify", `{"title": 1}`}, 3, "the tool reported an error"},
		{[]string{"slugify", `{not json`}, 1, "not valid JSON"},
		{[]string{"nosuch", `{}`}, 1, `no tool "nosuch"`},
	} {
		code, _, errs := runCLI(append([]string{"call", "--plugins", dir, cache}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
	// A module that does not match its pin fails with a readable message.
	os.WriteFile(filepath.Join(dir, "textkit.wasm"), append(module, 0), 0o644)
	code, _, errs = runCLI("call", "--plugins", dir, cache, "slugify", `{"text": "x"}`)
	if code != 1 || !strings.Contains(errs, "the manifest pins") {
		t.Errorf("tampered module: exit %d %s", code, errs)
	}
}

func TestCallGrants(t *testing.T) {
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	grants := filepath.Join(t.TempDir(), "grants.json")
	os.WriteFile(grants, []byte(`{"plugins": {"textkit": {"log": true}}, "caps": {"timeout_ms": 5000}}`), 0o644)
	code, out, errs := runCLI("call", "--plugins", dir, "--grants", grants, "--cache-dir=off", "textStats", `{"text": "x"}`)
	if code != 0 || !strings.Contains(out, `"characters":1`) {
		t.Fatalf("exit %d %s %s", code, out, errs)
	}
	os.WriteFile(grants, []byte(`{"plugins": {"textkit": {"logs": true}}}`), 0o644)
	if code, _, errs := runCLI("call", "--plugins", dir, "--grants", grants, "textStats", `{"text": "x"}`); code != 1 || !strings.Contains(errs, `unknown field "logs"`) {
		t.Fatalf("bad grants: exit %d %s", code, errs)
	}
}

func TestCacheDirNotInPluginDir(t *testing.T) {
	code, _, errs := runCLI("call", "--plugins", builtCatalog(t), "--cache-dir", builtCatalog(t)+"/cache", "slugify", `{"text": "x"}`)
	if code != 1 || !strings.Contains(errs, "host-owned directory") {
		t.Fatalf("exit %d %s", code, errs)
	}
}

// TestRunJSON drives "toolshed run" against a scripted model on 127.0.0.1:
// tool_search, then the found plugin tool (real wasm), then the answer.
func TestRunJSON(t *testing.T) {
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	// The other bundled manifests, each admitted with textkit's module
	// (their tools are listed, never called).
	for _, f := range []string{"sql.json", "chart.json", "calculate.json", "glossary.json", "weather.json"} {
		b, _ := os.ReadFile(filepath.Join(bundled, f))
		b = regexp.MustCompile(`"wasm": "[^"]*"`).ReplaceAll(b, []byte(`"wasm": "textkit.wasm"`))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
		runCLI("plugins", "pin", filepath.Join(dir, f))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content, Name string }
		}
		json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		call := func(name, args string) string {
			return `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"` + name + `","arguments":` + strconv.Quote(args) + `}}]}}]}`
		}
		switch {
		case last.Role == "user":
			io.WriteString(w, call("tool_search", `{"query":"url slug"}`))
		case last.Name == "tool_search":
			io.WriteString(w, call("slugify", `{"text":"Hello Toolshed"}`))
		default:
			io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"slug: `+last.Content+`"}}]}`)
		}
	}))
	defer srv.Close()
	code, out, errs := runCLI("run", "--plugins", dir, "--base-url", srv.URL+"/v1", "--json", "make a slug")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Answer     string
		Discovered []string
		Rounds     []struct {
			Tools     []string
			ToolCalls []struct {
				Name, Arguments string
				IsError         bool
			} `json:"tool_calls"`
			ToolTokens     int `json:"tool_tokens"`
			AllToolsTokens int `json:"all_tools_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Answer != "slug: hello-toolshed" || len(v.Rounds) != 3 || v.Discovered[0] != "slugify" {
		t.Fatalf("%s", out)
	}
	if strings.Join(v.Rounds[0].Tools, ",") != "current_time,todo_write,tool_search" || v.Rounds[1].ToolCalls[0].Name != "slugify" ||
		v.Rounds[0].ToolTokens == 0 || v.Rounds[0].AllToolsTokens <= v.Rounds[0].ToolTokens {
		t.Fatalf("rounds: %s", out)
	}
	if code, _, errs := runCLI("run", "--plugins", dir, "--base-url", srv.URL+"/v1", "--search-mode", "fuzzy", "x"); code != 1 || !strings.Contains(errs, "fuzzy") {
		t.Fatalf("bad mode: exit %d %s", code, errs)
	}
}

// TestChat types two lines into "toolshed chat" against a streaming
// scripted model; each line is its own request.
func TestChat(t *testing.T) {
	var mu sync.Mutex
	var toolLists [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool
			Messages []struct{ Role, Content, Name string }
			Tools    []struct{ Function struct{ Name string } }
		}
		json.NewDecoder(r.Body).Decode(&req)
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		mu.Lock()
		toolLists = append(toolLists, names)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.Contains(last.Content, "time") {
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"current_time","arguments":"{}"}}]}`, "null")
			chunk(`{}`, `"tool_calls"`)
		} else {
			chunk(`{"role":"assistant","content":"It is "}`, "null")
			chunk(`{"content":"late."}`, "null")
			chunk(`{}`, `"stop"`)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	stdin = strings.NewReader("what time is it\nthanks\n")
	defer func() { stdin = strings.NewReader("") }()
	code, out, errs := runCLI("chat", "--plugins", builtCatalog(t), "--base-url", srv.URL+"/v1", "--no-todo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "[current_time {}]") || !strings.Contains(out, "[current_time: ok,") || strings.Count(out, "It is late.") != 2 {
		t.Fatalf("transcript:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(toolLists) != 3 || strings.Join(toolLists[2], ",") != "current_time,tool_search" {
		t.Fatalf("tool lists %v", toolLists)
	}
}

// TestBundledDefaults: a plugin directory's own grants file (the bundled
// catalog's plugin-manifests/_grants.json) grants its plugins under every
// spelling of the folder's path, from any working directory; --grants
// replaces it; a folder without one grants nothing.
func TestBundledDefaults(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "catalog")
	os.Mkdir(dir, 0o755)
	copyUnits(t, dir, wasmbuild.Bundled(t, "../..", "sql", "chart"))
	own, err := os.ReadFile(filepath.Join(bundled, "_grants.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_grants.json"), own, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "glossary-data"), 0o755)
	os.Symlink(dir, filepath.Join(root, "link"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Chdir(t.TempDir()) // outside the folder and the repository
	for _, spelling := range []string{dir, dir + "/", dir + "/.", filepath.Join(root, "link"), filepath.Join(dir, "..", "catalog")} {
		code, out, errs := runCLI("call", "--plugins", spelling, "--cache-dir=off", "executeSql", `{"sql": "SELECT COUNT(*) AS n FROM orders"}`)
		if code != 0 || !strings.HasPrefix(out, "n\n") {
			t.Fatalf("executeSql with --plugins %s: exit %d %q %s", spelling, code, out, errs)
		}
	}
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLSHED_PLUGINS", rel)
	code, out, errs := runCLI("call", "--cache-dir=off", "createBarChart", `{"title": "测试", "labels": ["a"], "series": [{"name": "s", "values": [1]}]}`)
	if code != 0 || !strings.Contains(out, "测试.svg") {
		t.Fatalf("chart through a relative $TOOLSHED_PLUGINS: exit %d %q %s", code, out, errs)
	}
	// --grants wins over the folder's own file.
	empty := filepath.Join(root, "none.json")
	os.WriteFile(empty, []byte(`{"plugins": {}}`), 0o644)
	code, out, _ = runCLI("call", "--plugins", dir, "--grants", empty, "--cache-dir=off", "executeSql", `{"sql": "SELECT 1"}`)
	if code != 3 || !strings.Contains(out, `"sql" is not granted`) {
		t.Fatalf("--grants did not replace the folder's grants: exit %d %q", code, out)
	}
	// A grants file other users could have written is not applied: the
	// command stops and says why (docs/SECURITY.md).
	ownPath := filepath.Join(dir, "_grants.json")
	for _, c := range []struct {
		path string
		mode os.FileMode
		want string
	}{{ownPath, 0o646, "is writable by every user"}, {dir, 0o777, "is writable by every user"}} {
		st, _ := os.Stat(c.path)
		os.Chmod(c.path, c.mode)
		code, _, errs := runCLI("call", "--plugins", dir, "--cache-dir=off", "executeSql", `{"sql": "SELECT 1"}`)
		os.Chmod(c.path, st.Mode().Perm())
		if code != 1 || !strings.Contains(errs, "the plugin folder's grants are not applied") || !strings.Contains(errs, c.want) {
			t.Fatalf("%s mode %#o: exit %d %s", c.path, c.mode, code, errs)
		}
	}
	os.Rename(ownPath, ownPath+".real")
	os.Symlink(ownPath+".real", ownPath)
	if code, _, errs := runCLI("call", "--plugins", dir, "--cache-dir=off", "executeSql", `{"sql": "SELECT 1"}`); code != 1 || !strings.Contains(errs, "not a regular file") {
		t.Fatalf("a linked grants file: exit %d %s", code, errs)
	}
	// A folder without a grants file gets nothing.
	os.Remove(ownPath)
	code, out, _ = runCLI("call", "--plugins", dir, "--cache-dir=off", "executeSql", `{"sql": "SELECT 1"}`)
	if code != 3 || !strings.Contains(out, `"sql" is not granted`) {
		t.Fatalf("a folder without grants: exit %d %q", code, out)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestArtifactsListed(t *testing.T) {
	resp := &host.Response{Rounds: []host.Round{{ToolCalls: []host.ToolCallRecord{
		{Name: "executeSql", Structured: json.RawMessage(`{"columns":[]}`)},
		{Name: "createBarChart", Structured: json.RawMessage(`{"artifact":"x"}`), Artifacts: []artifact.Artifact{{ID: "x", Path: "/a/chart-x.svg"}}},
	}}}}
	if got := artifacts(resp); len(got) != 1 || got[0] != "/a/chart-x.svg" {
		t.Fatalf("%v", got)
	}
}

// TestServeEndpoints serves a live catalog and drops a plugin into it.
func TestServeEndpoints(t *testing.T) {
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	live, err := catalog.NewLive(dir, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := wasm.New(&wasm.Options{CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	srv := httptest.NewServer((&server{live: live, runtime: rt}).routes())
	defer srv.Close()
	get := func(path string, v any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if v != nil {
			json.NewDecoder(resp.Body).Decode(v)
		}
		return resp.StatusCode
	}
	if code := get("/healthz", nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	var plugins struct {
		Generation uint64
		Plugins    []struct{ Name, Version, State string }
	}
	if get("/v1/plugins", &plugins); plugins.Generation != 1 || len(plugins.Plugins) != 1 || plugins.Plugins[0].State != "not compiled" {
		t.Fatalf("plugins %+v", plugins)
	}
	var res struct {
		Results []struct{ Name string }
	}
	if get("/v1/search?q=url+slug&limit=1", &res); len(res.Results) != 1 || res.Results[0].Name != "slugify" {
		t.Fatalf("search %+v", res)
	}
	if code := get("/v1/search", nil); code != 400 {
		t.Fatalf("missing q: %d", code)
	}
	if code := get("/v1/search?q=x&limit=500", nil); code != 400 {
		t.Fatalf("bad limit: %d", code)
	}
	// Drop the chart plugin in; after a reload search finds it.
	module, _ := os.ReadFile(wasmbuild.Build(t, "../../plugins/chart"))
	os.WriteFile(filepath.Join(dir, "chart.wasm"), module, 0o644)
	man, _ := os.ReadFile(filepath.Join(bundled, "chart.json"))
	os.WriteFile(filepath.Join(dir, "chart.json"), man, 0o644)
	runCLI("plugins", "pin", filepath.Join(dir, "chart.json"))
	live.Reload()
	if get("/v1/search?q=柱状图", &res); len(res.Results) == 0 || res.Results[0].Name != "createBarChart" {
		t.Fatalf("after reload: %+v", res)
	}
	if get("/v1/plugins", &plugins); plugins.Generation != 2 || len(plugins.Plugins) != 2 {
		t.Fatalf("plugins after reload %+v", plugins)
	}
}

// TestToolTokensBundled reproduces the figure in docs/AGENT.md: the tool
// definitions round 1 sends for the bundled catalog against sending every
// tool (go test -run TestToolTokensBundled -v ./cmd/toolshed).
func TestToolTokensBundled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for _, flags := range [][]string{{}, {"--no-time", "--no-todo"}} {
		args := append([]string{"run", "--plugins", builtCatalog(t), "--base-url", srv.URL + "/v1", "--json"}, flags...)
		code, out, errs := runCLI(append(args, "hi")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var v struct {
			Rounds []struct {
				Tools          []string
				ToolTokens     int `json:"tool_tokens"`
				AllToolsTokens int `json:"all_tools_tokens"`
			}
		}
		json.Unmarshal([]byte(out), &v)
		r := v.Rounds[0]
		t.Logf("always-on %v: %d tokens sent, %d for every tool (%.0f%% fewer)", r.Tools, r.ToolTokens, r.AllToolsTokens,
			100*(1-float64(r.ToolTokens)/float64(r.AllToolsTokens)))
		if r.ToolTokens == 0 || r.AllToolsTokens < 4*r.ToolTokens {
			t.Errorf("round 1 sent %d tokens against %d for all tools", r.ToolTokens, r.AllToolsTokens)
		}
	}
}

// TestPluginsPinGrants: plugins pin --grants writes the module's sha256
// into the grants file, keeps what was there, and leaves a file it cannot
// read as it was.
func TestPluginsPinGrants(t *testing.T) {
	dir, module := textkitDir(t)
	grants := filepath.Join(t.TempDir(), "grants.json")
	os.WriteFile(grants, []byte(`{"caps": {"timeout_ms": 5000}, "plugins": {"textkit": {"log": true}}}`), 0o644)
	code, out, errOut := runCLI("plugins", "pin", "--grants", grants, filepath.Join(dir, "textkit.json"))
	if code != 0 {
		t.Fatalf("pin: %d %s %s", code, out, errOut)
	}
	sum := sha256.Sum256(module)
	f, err := wasm.ReadGrantsFile(grants)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Plugins["textkit"]
	if p.SHA256 != hex.EncodeToString(sum[:]) || !p.Log || f.Caps.TimeoutMS != 5000 {
		t.Fatalf("grants after pin: %+v %+v", f.Caps, p)
	}
	bad := []byte(`{"plugins": 3}`)
	os.WriteFile(grants, bad, 0o644)
	if code, _, _ := runCLI("plugins", "pin", "--grants", grants, filepath.Join(dir, "textkit.json")); code == 0 {
		t.Fatal("pinned into a grants file whose plugins is not an object")
	}
	if b, _ := os.ReadFile(grants); string(b) != string(bad) {
		t.Fatalf("the bad grants file was changed: %s", b)
	}
}

// TestOperatorLimits: toolshed.yaml's limits and the grants file's caps
// meet at the lower of the two; zero leaves the other.
func TestOperatorLimits(t *testing.T) {
	o := &operator{caps: wasm.Caps{Timeout: 20 * time.Second, MaxMemoryMB: 512}}
	o.withLimits(config.Limits{Timeout: 30 * time.Second, MaxMemoryMB: 128, MaxArtifacts: 3})
	want := wasm.Caps{Timeout: 20 * time.Second, MaxMemoryMB: 128, MaxArtifacts: 3}
	if o.caps != want {
		t.Fatalf("caps %+v, want %+v", o.caps, want)
	}
}

// TestGrantsAllowPrivileged: a grants file naming a PostgreSQL database
// behind a superuser is refused with what was found, unless that database
// says allow_privileged; a read-only role needs nothing.
func TestGrantsAllowPrivileged(t *testing.T) {
	admin := pgtest.Start(t)
	dir := t.TempDir()
	write := func(dsn string, allow bool) string {
		b, _ := json.Marshal(map[string]any{"databases": map[string]any{"dw": map[string]any{"driver": "postgres", "dsn": dsn, "allow_privileged": allow}}})
		p := filepath.Join(dir, "grants.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := loadOperator(dir, write(admin, false), sqlcap.Options{}); err == nil || !strings.Contains(err.Error(), "superuser") {
		t.Fatalf("a superuser DSN was accepted: %v", err)
	}
	for _, c := range []struct {
		dsn   string
		allow bool
	}{{admin, true}, {pgtest.ReadOnlyRole(t, admin, "reader"), false}} {
		o, err := loadOperator(dir, write(c.dsn, c.allow), sqlcap.Options{})
		if err != nil {
			t.Fatalf("allow=%v: %v", c.allow, err)
		}
		o.close()
	}
}
