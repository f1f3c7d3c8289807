package main

import (
	"encoding/json"
	"encoding/xml"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
)

// The suite itself runs with `make bench`; these tests check its parts
// quickly (make test runs them).

func TestEnginesOnChineseSet(t *testing.T) {
	d, err := readDataset("Chinese set", "../search/testdata/zh-eval", true)
	if err != nil {
		t.Fatal(err)
	}
	qs := sample(d.Queries, 40)
	got := map[string]quality{}
	for _, e := range []engineSpec{toolshedEngine(), bleveEngine(false), bleveEngine(true), baselineEngine()} {
		q, err := measure(e, d.Tools, qs, true)
		if err != nil {
			t.Fatal(err)
		}
		if q.Queries != len(qs) || q.P50 <= 0 || q.Recall5 < 0 || q.Recall5 > 1 {
			t.Errorf("%s: implausible figures %+v", e.name, q)
		}
		got[e.name] = q
	}
	if got["Toolshed"].Recall5 <= got["naive BM25"].Recall5 {
		t.Errorf("Toolshed recall@5 %.4f is not above the naive baseline's %.4f", got["Toolshed"].Recall5, got["naive BM25"].Recall5)
	}
}

func TestSynthCatalog(t *testing.T) {
	seal := []manifest.Tool{
		{Name: "getWeather", Description: "Get the weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "sendMail", Description: "Send an email", Parameters: []byte(`{"type":"object","properties":{"to":{"type":"string"}}}`)},
		{Name: "convertCurrency", Description: "Convert money"},
	}
	a, b := synthCatalog(seal, 50), synthCatalog(seal, 50)
	if len(a) != 50 {
		t.Fatalf("%d tools, want 50", len(a))
	}
	seen := map[string]bool{}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description {
			t.Fatalf("tool %d differs between two builds: %q, %q", i, a[i].Name, b[i].Name)
		}
		if seen[a[i].Name] {
			t.Fatalf("duplicate name %q", a[i].Name)
		}
		seen[a[i].Name] = true
	}
	if got := synthCatalog(seal, 2); len(got) != 2 || got[1].Name != "sendMail" {
		t.Errorf("a catalog smaller than the set is its first tools, got %v", got)
	}
}

// TestSnapshotOf: a catalog made for the context section holds every
// tool, whatever the manifest format's per-plugin and size limits.
func TestSnapshotOf(t *testing.T) {
	seal := []manifest.Tool{
		{Name: "getWeather", Description: "Get the weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "sendMail", Description: "Send an email", Parameters: []byte(`{"type":"object","properties":{"to":{"type":"string"}}}`)},
	}
	tools := synthCatalog(seal, 1000)
	snap, err := snapshotOf(tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 || len(snap.Tools) != len(tools) {
		t.Fatalf("%d of %d tools loaded; errors %v", len(snap.Tools), len(tools), snap.Errors)
	}
}

func TestRepairs(t *testing.T) {
	used := map[string]bool{}
	if got := toolName("request First Aid", used); got != "request_First_Aid" {
		t.Errorf("toolName = %q", got)
	}
	if got := toolName("request_First Aid", used); got != "request_First_Aid_2" {
		t.Errorf("second toolName = %q", got)
	}
	raw := []byte(`{"type":"object","properties":{"age":{"type":"integer","examples":"12"}}}`)
	if _, err := manifest.CompileSchema(repairSchema(raw)); err != nil {
		t.Errorf("repaired schema does not compile: %v", err)
	}
}

// TestReport writes a report from made-up figures: the Markdown has every
// section and the charts are well-formed XML.
func TestReport(t *testing.T) {
	q := func(e string, r float64, p50 time.Duration) quality {
		return quality{Engine: e, Recall5: r, Recall10: r, P50: p50, P99: 2 * p50, Build: time.Millisecond}
	}
	r := &results{Started: time.Now(), Machine: describeMachine(), Quick: true}
	for _, s := range []string{"Seal-Tools", "MetaTool"} {
		r.Search = append(r.Search, setResult{Name: s, Tools: 10, Queries: 5, Rows: []quality{
			q("Toolshed", 0.9, 40*time.Microsecond), q("bleve (_all)", 0.8, time.Millisecond), q("bleve (fields)", 0.7, 2*time.Millisecond), q("naive BM25", 0.6, 100*time.Microsecond)}})
	}
	for _, bi := range []bool{true, false} {
		for _, n := range []int{10, 50, 200} {
			r.Context = append(r.Context, contextRow{BuiltIns: bi, Tools: n, Requests: 1, AllOn: float64(100 * n), Round1: 300, After: 600, Found: 3, SavedPct: 100 * (1 - 600/float64(100*n))})
		}
	}
	for i, w := range []string{"native", "warm", "pool", "no pool", "process"} {
		r.Calls = append(r.Calls, callRow{Way: w, Calls: 1, Mean: time.Duration(i+1) * time.Millisecond, VsNative: float64(i + 1), VsWarmWasm: 1})
	}
	r.Through = []throughputRow{{What: "search only", Workers: 4, Sessions: 10, PerSecond: 10, PoolHitRate: -1}, {What: "search + one plugin call", Workers: 4, Sessions: 5, PerSecond: 5, PoolHitRate: 0.5}}
	r.Memory = memoryRow{Sessions: 2, HeapPerSession: 4, RSSPerSession: 3}
	for _, n := range []int{100, 1000} {
		for i, e := range []string{"Toolshed", "bleve (_all)", "naive BM25"} {
			r.Scale = append(r.Scale, scaleRow{Tools: n, Engine: e, P50: time.Duration((i+1)*n) * time.Microsecond, Recall5: -1, Natural: -1})
		}
	}
	r.Reload = reloadResult{Command: "go test", Drops: 3, P50: 120 * time.Millisecond, Max: 150 * time.Millisecond}
	dir := t.TempDir()
	if err := writeReport(dir, r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## 1. Search", "## 2. Context", "## 3. Plugin call cost", "## 4. Scale", "## 5. Hot reload", "## What the numbers say", "bench-search.svg", "bench-context.svg", "bench-scale.svg", "p50 120 ms"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, name := range []string{"bench-search.svg", "bench-context.svg", "bench-scale.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(b)))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: %v", name, err)
				}
				break
			}
		}
		if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
			t.Errorf("%s has NaN or Inf", name)
		}
	}
}

func TestEvalTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	os.MkdirAll(dir, 0o755)
	tools := `{"name":"getWeather","description":"Get the current weather for a city"}
{"name":"sendEmail","description":"Send an email message to a recipient"}
{"name":"convertCurrency","description":"Convert an amount between two currencies"}
{"name":"searchFlights","description":"Search flights between two airports on a date"}
`
	var qs strings.Builder
	for i, q := range []string{"what is the weather in Paris", "weather forecast for Berlin today", "mail my boss the report",
		"send an email to Alice", "how many euros is 100 dollars", "convert 50 pounds to yen", "find a flight to Tokyo", "flights from Oslo to Rome"} {
		tool := []string{"getWeather", "sendEmail", "convertCurrency", "searchFlights"}[i/2]
		qs.WriteString(`{"query":"` + q + `","tools":["` + tool + `"]}` + "\n")
	}
	os.WriteFile(filepath.Join(dir, "tools.jsonl"), []byte(tools), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(qs.String()), 0o644)
	var o evalOptions
	if err := o.parse("all", "50", "recombined,sentence", `{"K1":1.2}`, "", ""); err != nil {
		t.Fatal(err)
	}
	o.dirs = []string{filepath.Dir(dir)}
	rows, err := evalTable(o, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Tools != 4 || rows[1].Tools != 50 || rows[2].Shape != "sentence" {
		t.Fatalf("rows: %+v", rows)
	}
	for _, r := range rows {
		for _, e := range evalEngineOrder {
			if v, ok := r.Recall5[e]; !ok || v < 0 || v > 1 {
				t.Errorf("%s, %d tools: %s recall@5 %v", r.Set, r.Tools, e, v)
			}
		}
		if r.Cand < 0 || r.Cand > 1 || r.Queries != 8 {
			t.Errorf("%s, %d tools: candidates %v, %d requests", r.Set, r.Tools, r.Cand, r.Queries)
		}
	}
	if rows[0].Recall5["Toolshed"] < 0.5 {
		t.Errorf("Toolshed finds %.2f of a trivial set", rows[0].Recall5["Toolshed"])
	}
	var buf strings.Builder
	printEval(&buf, rows, o.half, nil)
	if !strings.Contains(buf.String(), "Toolshed − bleve") || !strings.Contains(buf.String(), "tiny") {
		t.Errorf("table:\n%s", buf.String())
	}
	for _, bad := range [][6]string{{"train", "", "", "", "", ""}, {"test", "x", "", "", "", ""}, {"test", "", "odd", "", "", ""},
		{"test", "", "", `{"Nope":1}`, "", ""}, {"test", "", "", "", "", "lucene"}} {
		if err := o.parse(bad[0], bad[1], bad[2], bad[3], bad[4], bad[5]); err == nil {
			t.Errorf("parse accepted %q", bad)
		}
	}
}

func TestNaturalSetMerges(t *testing.T) {
	root := t.TempDir()
	write := func(set, tools, queries string) {
		os.MkdirAll(filepath.Join(root, set), 0o755)
		os.WriteFile(filepath.Join(root, set, "tools.jsonl"), []byte(tools), 0o644)
		os.WriteFile(filepath.Join(root, set, "queries.jsonl"), []byte(queries), 0o644)
	}
	write("a", `{"name":"get_weather","description":"weather"}`+"\n", `{"query":"weather in Oslo","tools":["get_weather"]}`+"\n")
	write("b", `{"name":"getWeather","description":"weather again"}`+"\n"+`{"name":"sendMail","description":"mail"}`+"\n",
		`{"query":"is it raining","tools":["getWeather"]}`+"\n"+`{"query":"mail Bob","tools":["sendMail"]}`+"\n")
	write("seal-tools", `{"name":"x","description":"x"}`+"\n", `{"query":"x","tools":["x"]}`+"\n")
	write("zh", `{"name":"天气","description":"查天气"}`+"\n", `{"query":"查天气","tools":["天气"]}`+"\n")
	d, err := naturalSet([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != 2 || len(d.Queries) != 3 || d.Queries[1].Tools[0] != "get_weather" {
		t.Fatalf("merged: %d tools %+v, queries %+v", len(d.Tools), d.Tools, d.Queries)
	}
	if d, _ := naturalSet([]string{filepath.Join(root, "none")}); d != nil {
		t.Errorf("no sets gave %+v", d)
	}
}

func TestPadPoolLeavesOutVariants(t *testing.T) {
	mk := func(name string, tools []string, qs ...string) evalSet {
		d := &dataset{Name: name}
		for _, n := range tools {
			d.Tools = append(d.Tools, manifest.Tool{Name: n})
		}
		for _, q := range qs {
			d.Queries = append(d.Queries, query{Query: q, Tools: []string{tools[0]}})
		}
		return evalSet{dataset: d}
	}
	a := mk("sgd", []string{"FindRestaurants"}, "a table for two", "a cheap place to eat")
	b := mk("sgd-x", []string{"SearchEateries"}, "a table for two", "a cheap place to eat")
	c := mk("other", []string{"getWeather"}, "rain tomorrow?")
	zh := mk("zh", []string{"天气"}, "查天气")
	zh.Chinese = true
	pool := padPool(a, []evalSet{a, b, c, zh})
	if len(pool) != 1 || pool[0].Name != "getWeather" {
		t.Errorf("pool of sgd: %+v, want only the other English set's tools", pool)
	}
}

// TestEvalTableSemantic: -embed adds the candidate share with the
// semantic stage, through an OpenAI-compatible endpoint on 127.0.0.1; the
// vectors are kept in the cache file, so a second run calls nothing, and
// a broken cache file is an error that says what to do.
func TestEvalTableSemantic(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, s := range req.Input {
			v := make([]float32, 16)
			for _, w := range strings.Fields(strings.ToLower(s)) {
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%16]++
			}
			v[0] += 0.01
			data = append(data, item{i, v})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "tiny")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "tools.jsonl"), []byte(`{"name":"getWeather","description":"Get the current weather for a city"}
{"name":"sendEmail","description":"Send an email message to a recipient"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"query":"weather in Paris","tools":["getWeather"]}
{"query":"mail my boss","tools":["sendEmail"]}
`), 0o644)
	cache := filepath.Join(t.TempDir(), "c", "embeddings.bin")
	run := func() []evalRow {
		t.Helper()
		var o evalOptions
		if err := o.parse("all", "40", "recombined", "", "", "Toolshed"); err != nil {
			t.Fatal(err)
		}
		o.dirs = []string{filepath.Dir(dir)}
		e, err := newDiskEmbedder([]string{srv.URL + "/v1", srv.URL + "/v1"}, "m", cache)
		if err != nil {
			t.Fatal(err)
		}
		o.embedder = e
		rows, err := evalTable(o, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	rows := run()
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.CandSem < 0 || r.CandSem > 1 || r.CandSemMiss > 1 {
			t.Errorf("%d tools: semantic share %v / %v", r.Tools, r.CandSem, r.CandSemMiss)
		}
	}
	var buf strings.Builder
	printEval(&buf, rows, evalrun.All, nil)
	if !strings.Contains(buf.String(), "with the semantic stage") {
		t.Errorf("table:\n%s", buf.String())
	}
	before := calls.Load()
	if before == 0 {
		t.Fatal("the endpoint was never called")
	}
	run()
	if calls.Load() != before {
		t.Fatalf("a second run called the endpoint %d more times; the cache file should answer", calls.Load()-before)
	}
	b, _ := os.ReadFile(cache)
	os.WriteFile(cache, b[:len(b)-3], 0o644)
	if _, err := newDiskEmbedder([]string{srv.URL}, "m", cache); err == nil || !strings.Contains(err.Error(), "delete it to start over") {
		t.Fatalf("a cut cache file: %v", err)
	}
}
