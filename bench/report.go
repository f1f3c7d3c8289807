package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// table is printed as aligned text on stdout and as Markdown in the report.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t table) text(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.head, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.ReplaceAll(strings.Join(r, "\t"), "**", ""))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func (t table) md() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n|")
	for range t.head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func f4(v float64) string  { return fmt.Sprintf("%.4f", v) }
func mib(v float64) string { return fmt.Sprintf("%.1f MiB", v) }
func ratio(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f×", v)
	case v >= 10:
		return fmt.Sprintf("%.1f×", v)
	default:
		return fmt.Sprintf("%.2f×", v)
	}
}
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
func bold(s string, on bool) string {
	if on {
		return "**" + s + "**"
	}
	return s
}

// --- 1. search ---

func searchTable(sets []setResult) table {
	t := table{head: []string{"set", "engine", "recall@5", "recall@10", "hit@5", "MRR", "index build", "heap", "p50", "p99", "p50 vs Toolshed"}}
	for _, s := range sets {
		ts := s.Rows[0]
		for i, q := range s.Rows {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("%s (%s tools, %s queries)", s.Name, thousands(s.Tools), thousands(s.Queries))
			}
			t.add(label, bold(q.Engine, i == 0), f4(q.Recall5), f4(q.Recall10), f4(q.Hit5), f4(q.MRR),
				fmtDur(q.Build), mib(q.HeapMiB), fmtDur(q.P50), fmtDur(q.P99), ratio(float64(q.P50)/float64(ts.P50)))
		}
	}
	return t
}

// searchVerdict compares Toolshed with the bleve rows of one set.
type searchVerdict struct {
	set                  string
	recallBetter         bool    // recall@5 and @10 above every bleve configuration
	recallGain           float64 // recall@5 over the best bleve, in points
	p50Ratio             float64 // fastest bleve p50 / Toolshed p50
	bestBleve, fastBleve string
}

func verdicts(sets []setResult) []searchVerdict {
	var out []searchVerdict
	for _, s := range sets {
		ts := s.Rows[0]
		v := searchVerdict{set: s.Name, recallBetter: true, recallGain: math.Inf(1), p50Ratio: math.Inf(1)}
		for _, q := range s.Rows[1:] {
			if !strings.HasPrefix(q.Engine, "bleve") {
				continue
			}
			if !(ts.Recall5 > q.Recall5 && ts.Recall10 > q.Recall10) {
				v.recallBetter = false
			}
			if g := 100 * (ts.Recall5 - q.Recall5); g < v.recallGain {
				v.recallGain, v.bestBleve = g, q.Engine
			}
			if r := float64(q.P50) / float64(ts.P50); r < v.p50Ratio {
				v.p50Ratio, v.fastBleve = r, q.Engine
			}
		}
		out = append(out, v)
	}
	return out
}

func printSearch(w io.Writer, sets []setResult) {
	fmt.Fprintln(w, "== 1. Search: Toolshed vs bleve vs naive BM25")
	searchTable(sets).text(w)
}

// --- 2. context ---

func contextTable(rows []contextRow) table {
	t := table{head: []string{"catalog", "every tool always on", "Toolshed, round 1", "Toolshed, after discovery", "tools discovered", "saved per round after discovery", "saved over the 2-round request"}}
	for _, r := range rows {
		t.add(thousands(r.Tools)+" tools", thousands(int(math.Round(r.AllOn))), thousands(int(math.Round(r.Round1))), thousands(int(math.Round(r.After))),
			fmt.Sprintf("%.1f", r.Found), bold(fmt.Sprintf("%.1f%%", r.SavedPct), r.Tools >= 50), fmt.Sprintf("%.1f%%", r.Request2R))
	}
	return t
}

func printContext(w io.Writer, rows []contextRow) {
	fmt.Fprintln(w, "== 2. Context saved: tool-definition tokens per round (o200k_base)")
	for _, b := range []bool{true, false} {
		var part []contextRow
		for _, r := range rows {
			if r.BuiltIns == b {
				part = append(part, r)
			}
		}
		if len(part) > 0 {
			fmt.Fprintf(w, "always-on built-ins: %v\n", b)
			contextTable(part).text(w)
		}
	}
}

// --- 3. calls ---

func callTable(rows []callRow) table {
	t := table{head: []string{"one echo call", "calls", "mean", "p50", "p99", "mean vs native", "mean vs warm wasm"}}
	for _, r := range rows {
		t.add(r.Way, thousands(r.Calls), fmtDur(r.Mean), fmtDur(r.P50), fmtDur(r.P99), ratio(r.VsNative), ratio(r.VsWarmWasm))
	}
	return t
}

// callWay returns the row of the given way.
func callWay(rows []callRow, way string) (callRow, bool) {
	for _, r := range rows {
		if r.Way == way {
			return r, true
		}
	}
	return callRow{}, false
}

func printCalls(w io.Writer, rows []callRow) {
	fmt.Fprintln(w, "== 3. Plugin call cost: the same echo logic four ways, and in C")
	callTable(rows).text(w)
	if c, ok := callWay(rows, cWay); ok && c.Paired != nil {
		fmt.Fprintln(w, "the C row's loop, one call of each in turn:")
		callTable([]callRow{c.Paired.Native, c.Paired.Go, c}).text(w)
	}
}

// --- 4. scale ---

func throughputTable(rows []throughputRow) table {
	t := table{head: []string{"session", "concurrent workers", "sessions", "sessions/s", "p50", "p99", "pool hits"}}
	for _, r := range rows {
		hits := "—"
		if r.PoolHitRate >= 0 {
			hits = fmt.Sprintf("%.0f%%", 100*r.PoolHitRate)
		}
		t.add(r.What, fmt.Sprint(r.Workers), thousands(r.Sessions), thousands(int(math.Round(r.PerSecond))), fmtDur(r.P50), fmtDur(r.P99), hits)
	}
	return t
}

func memoryTable(rows ...memoryRow) table {
	t := table{head: []string{"live sessions, each holding its instance", "Go heap per session", "resident memory per session (RSS)", "proportional (PSS)"}}
	for _, m := range rows {
		if m.Sessions == 0 {
			continue
		}
		rssS, pssS := "—", "—"
		if m.RSSPerSession >= 0 {
			rssS = mib(m.RSSPerSession)
		}
		if m.PSSPerSession >= 0 {
			pssS = mib(m.PSSPerSession)
		}
		what := fmt.Sprint(m.Sessions)
		if m.What != "" {
			what += ", " + m.What
		}
		t.add(what, mib(m.HeapPerSession), rssS, pssS)
	}
	return t
}

func scaleTable(rows []scaleRow) table {
	t := table{head: []string{"tools", "engine", "index build", "heap", "p50", "p99", "p50 vs Toolshed", "recall@5 (Seal-Tools)", "recall@5 (natural requests)"}}
	var ts scaleRow
	for _, r := range rows {
		label := ""
		if r.Engine == "Toolshed" {
			ts, label = r, thousands(r.Tools)
		}
		rec := "—"
		if r.Recall5 >= 0 {
			rec = f4(r.Recall5)
		}
		nat := "—"
		if r.Natural >= 0 {
			nat = f4(r.Natural)
		}
		t.add(label, bold(r.Engine, r.Engine == "Toolshed"), fmtDur(r.Build), mib(r.HeapMiB), fmtDur(r.P50), fmtDur(r.P99), ratio(float64(r.P50)/float64(ts.P50)), rec, nat)
	}
	return t
}

func printScale(w io.Writer, th []throughputRow, m []memoryRow, sc []scaleRow) {
	fmt.Fprintln(w, "== 4. Scale")
	throughputTable(th).text(w)
	memoryTable(m...).text(w)
	scaleTable(sc).text(w)
}

// --- 5. reload ---

func printReload(w io.Writer, r reloadResult) {
	fmt.Fprintln(w, "== 5. Hot reload")
	if r.Err != "" {
		fmt.Fprintf(w, "%s: %s\n\n", r.Command, r.Err)
		return
	}
	fmt.Fprintf(w, "drop to searchable over %d drops: p50 %s, max %s\n\n", r.Drops, fmtDur(r.P50), fmtDur(r.Max))
}

// --- the report ---

func writeReport(dir string, r *results) error {
	charts := map[string]string{
		"bench-search.svg":  searchChart(r.Search),
		"bench-context.svg": contextChart(r.Context),
		"bench-scale.svg":   scaleChart(r.Scale),
	}
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "BENCHMARKS.md"), []byte(markdown(r)), 0o644)
}

func searchChart(sets []setResult) string {
	var groups, names []string
	var vals [][]float64
	for i, s := range sets {
		groups = append(groups, s.Name)
		for j, q := range s.Rows {
			if i == 0 {
				names = append(names, q.Engine)
				vals = append(vals, nil)
			}
			vals[j] = append(vals[j], q.Recall5)
		}
	}
	return barChart("Search: recall@5 (higher is better)", "recall@5", groups, names, vals, false, func(v float64) string { return fmt.Sprintf("%.1f", v) })
}

func contextChart(rows []contextRow) string {
	var groups []string
	vals := make([][]float64, 3)
	for _, r := range rows {
		if !r.BuiltIns {
			continue
		}
		groups = append(groups, thousands(r.Tools)+" tools")
		vals[0] = append(vals[0], r.AllOn)
		vals[1] = append(vals[1], r.Round1)
		vals[2] = append(vals[2], r.After)
	}
	return barChart("Tool-definition tokens per round (log scale)", "o200k_base tokens", groups,
		[]string{"every tool always on", "Toolshed, round 1", "Toolshed, after discovery"}, vals, true, func(v float64) string { return fmtTick(v, "") })
}

func scaleChart(rows []scaleRow) string {
	var ss []series
	idx := map[string]int{}
	for _, r := range rows {
		i, ok := idx[r.Engine]
		if !ok {
			i = len(ss)
			idx[r.Engine] = i
			ss = append(ss, series{Name: r.Engine})
		}
		ss[i].Points = append(ss[i].Points, point{float64(r.Tools), float64(r.P50) / 1e3})
	}
	return logLogChart("Search p50 latency vs catalog size", "tools in the catalog", "p50 per query", ss, func(v float64) string {
		if v >= 1000 {
			return fmt.Sprintf("%g ms", v/1000)
		}
		return fmt.Sprintf("%g µs", v)
	})
}

func markdown(r *results) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.Machine
	p("# Benchmarks\n\n")
	p("Toolshed measured against its peers, both sides in the same run on the same data. Every figure\n")
	p("on this page comes from one run of `make bench` (the `bench/` module; its own `go.mod`, so the\n")
	p("peer libraries never enter Toolshed's module), which writes this file and its charts. The\n")
	p("machine is shared with other work and noisy: compare figures within one run, and read the\n")
	p("ratios rather than the absolute times.\n\n")
	p("| | |\n|---|---|\n")
	p("| date | %s |\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	p("| machine | %s, %d CPUs (GOMAXPROCS %d), %s RAM, %s |\n", m.CPU, m.CPUs, m.GOMAXPROCS, m.MemTotal, m.OS)
	p("| software | %s; bleve %s; wazero %s; gse %s |\n\n", m.Go, m.Bleve, m.Wazero, m.Gse)
	if r.Quick {
		p("**This is a -quick smoke run with small samples: not for quoting.**\n\n")
	}
	p("Reproduce everything (this run took %s):\n\n", r.Elapsed.Round(time.Second))
	p("```sh\nmake bench                     # EVAL=DIR if the public sets are not in ../shared/eval\n")
	p("cd bench && go run . -eval ../../shared/eval -docs ''   # the same, printing the tables only\n```\n\n")
	p("Sections can be run alone with `-only` (`search`, `context`, `calls`, `scale`, `reload`;\n")
	p("`-docs ''` is implied): `cd bench && go run . -only calls`. The Go micro-benchmarks of the\n")
	p("main module are `make bench-go`.\n\n")

	// Summary.
	vs := verdicts(r.Search)
	p("## Summary\n\n")
	st := table{head: []string{"claim", "target", "measured", "met"}}
	for _, v := range vs {
		st.add("search recall, "+v.set, "above bleve", fmt.Sprintf("recall@5 %+.1f points over the better bleve (%s)", v.recallGain, v.bestBleve), yes(v.recallBetter))
	}
	for _, v := range vs {
		st.add("search p50 latency, "+v.set, "≥ 5× lower than bleve", fmt.Sprintf("%s lower than the faster bleve (%s)", ratio(v.p50Ratio), v.fastBleve), yes(v.p50Ratio >= 5))
	}
	for _, c := range contextTargetOrder(r.Context) {
		if c.Tools < 50 {
			continue
		}
		measured := fmt.Sprintf("%.1f%% fewer after discovery (%.1f%% over the request)", c.SavedPct, c.Request2R)
		if c.BuiltIns {
			// The built-ins are always on in both setups: not part of the
			// catalog whose deferral the target is about (see §2).
			st.add(fmt.Sprintf("the same, plus the 2 default built-ins always on in both setups, %s tools", thousands(c.Tools)), "reference", measured, "—")
			continue
		}
		st.add(fmt.Sprintf("tool-definition tokens, %s-tool catalog always on vs deferred", thousands(c.Tools)), "≥ 90% fewer per round", measured, yes(c.SavedPct >= 90))
	}
	if len(r.Calls) >= 5 {
		st.add("plugin call, warm wasm instance", "none set", fmt.Sprintf("%s the native function's mean; a process per call %s the warm call's", ratio(r.Calls[1].VsNative), ratio(r.Calls[4].VsWarmWasm)), "—")
	}
	if len(r.Through) >= 2 {
		st.add("sessions/s, search + one plugin call, 2 cores", "none set", fmt.Sprintf("%s/s (search alone %s/s)", thousands(int(math.Round(r.Through[1].PerSecond))), thousands(int(math.Round(r.Through[0].PerSecond)))), "—")
	}
	if len(r.Scale) > 0 {
		lt, lb := scaleFor(r.Scale, "Toolshed", false), scaleFor(r.Scale, "bleve (_all)", false)
		st.add(fmt.Sprintf("search p50 at %s tools", thousands(lt.Tools)), "none set", fmt.Sprintf("%s (bleve %s, %s)", fmtDur(lt.P50), fmtDur(lb.P50), ratio(float64(lb.P50)/float64(lt.P50))), "—")
	}
	if r.Reload.P50 > 0 {
		st.add("hot reload, drop to searchable", "p50 < 300 ms", fmt.Sprintf("p50 %s, max %s over %d drops", fmtDur(r.Reload.P50), fmtDur(r.Reload.Max), r.Reload.Drops), yes(r.Reload.P50 < 300*time.Millisecond))
	}
	b.WriteString(st.md())
	p("\n")

	// 1.
	p("## 1. Search: Toolshed vs bleve vs naive BM25\n\n")
	p("Each engine indexes the same catalog and answers the same labelled queries (the sets of\n")
	p("[SEARCH.md](SEARCH.md): Seal-Tools, MetaTool, and the Chinese set in `search/testdata/zh-eval`).\n\n")
	p("- **Toolshed**: `search.Build` over the documents the catalog makes of each tool (`catalog.Document`), defaults.\n")
	p("- **bleve (_all)**: bleve v2 with BM25 scoring (`ScoringModel: bm25`, scorch in memory), the same six\n")
	p("  fields (name, keywords, examples, description, parameter names, parameter descriptions), its English\n")
	p("  analyzer (`en`: Unicode words, possessives, lowercase, stop words, Porter stemmer) or, for the Chinese\n")
	p("  set, its CJK analyzer (`cjk`: bigrams); one match query on the composite `_all` field, bleve's default.\n")
	p("- **bleve (fields)**: the same index; a disjunction of one match query per field, boosted with\n")
	p("  Toolshed's field weights (name 3, keywords 2.5, examples 1.5, description 1, parameter names 0.6,\n")
	p("  parameter descriptions 0.4).\n")
	p("- **naive BM25**: the baseline of `toolshed eval --baseline` (name + description, no stemming, no expansion).\n\n")
	p("recall@k: mean share of a query's correct tools in the top k; hit@5: share of queries with a\n")
	p("correct tool in the top 5; MRR: mean reciprocal rank of the first correct tool in the top 10;\n")
	p("p50/p99: per query, each query timed on its second run (one-time costs excluded), one goroutine;\n")
	p("heap: live heap added by building the index.\n\n")
	b.WriteString(searchTable(r.Search).md())
	p("\n![recall@5 by set and engine](bench-search.svg)\n\n")
	p("Reproduce: `cd bench && go run . -only search`.\n\n")

	// 2.
	p("## 2. Context saved: tool-definition tokens per round\n\n")
	p("The tokens of the tool definitions sent to the model each round, counted by the host itself\n")
	p("(`host.Round.ToolTokens` and `AllToolsTokens`: OpenAI's o200k_base BPE over each definition's JSON\n")
	p("as sent). Each request runs through the real agent loop (`host.Host.Run`) against a scripted model\n")
	p("on a local HTTP server: round 1 calls `tool_search` with the request (limit: its number of labelled\n")
	p("tools), round 2 answers. %d Seal-Tools requests with 3–5 labelled tools each, spread over the set;\n", contextRequests)
	p("a catalog of N tools is the request's own tools plus the set's first tools, all 4,076 at the top\n")
	p("(the Seal-Tools names and schemas that the manifest format refuses, a handful, are repaired: spaces\n")
	p("become `_`, a string `examples` becomes an array). Every tool always on is every catalog tool\n")
	p("plus the same always-on tools; Toolshed sends the always-on tools and `tool_search`, then the\n")
	p("tools found. Figures are means over the requests.\n\n")
	for _, bi := range []bool{true, false} {
		var part []contextRow
		for _, c := range r.Context {
			if c.BuiltIns == bi {
				part = append(part, c)
			}
		}
		if len(part) == 0 {
			continue
		}
		if bi {
			p("With the default always-on built-ins (`current_time`, `todo_write`) on both sides:\n\n")
		} else {
			p("With no always-on tool but `tool_search` (deferred tools only):\n\n")
		}
		b.WriteString(contextTable(part).md())
		p("\n")
	}
	p("![tool-definition tokens per round](bench-context.svg)\n\n")
	p("Reproduce: `cd bench && go run . -only context`.\n\n")

	// 3.
	p("## 3. Plugin call cost\n\n")
	p("The same tool logic (`bench/echo`: decode a ~100-byte JSON object, return it as the ABI result)\n")
	p("called four ways, built with the standard Go toolchain at benchmark time: as a native Go function;\n")
	p("as a Toolshed plugin (`bench/echo/wasm`, the Go SDK, `GOOS=wasip1`) through `wasm.Session.Call` on\n")
	p("a warm instance, and as a new session's first call with the default pool of 2 ready instances (the\n")
	p("wait for the pool to refill between calls is not timed) and without a pool; and as an executable\n")
	p("started once per call (`bench/echo/cli`, arguments on stdin, result on stdout: the style of CLI\n")
	p("tools and of go-plugin-like process plugins, without their RPC handshake). The plugin's arguments\n")
	p("are checked against its JSON Schema on each call, as in production. The last row is the same echo\n")
	p("written in C with the C SDK (`sdk/c/examples/echo`, built at benchmark time by clang and\n")
	p("wasi-libc), on a warm instance: what the ABI itself costs without Go's runtime in the guest.\n\n")
	b.WriteString(callTable(r.Calls).md())
	if c, ok := callWay(r.Calls, cWay); ok && c.Paired != nil {
		n, g := c.Paired.Native, c.Paired.Go
		p("\nThe C row was timed in one loop with the native function and the Go plugin's warm instance, one\n")
		p("call of each in turn (its ratios are to those), so that the machine's load weighs on the three\n")
		p("alike:\n\n")
		b.WriteString(callTable([]callRow{n, g, c}).md())
		p("\nA warm call's overhead over the native function in that loop: %s for the C plugin\n", fmtDur(c.Mean-n.Mean))
		p("(p50 %s; target: below 20 µs), %s for the Go plugin (p50 %s).\n", fmtDur(c.P50-n.P50), fmtDur(g.Mean-n.Mean), fmtDur(g.P50-n.P50))
	}
	p("\nReproduce: `cd bench && go run . -only calls` (the C row needs Debian's clang, lld, wasi-libc and\n")
	p("libclang-rt-dev-wasm32; without them it is left out with a note).\n\n")

	// 4.
	p("## 4. Scale\n\n")
	p("**Sessions per second.** %d concurrent workers (2 per core) run sessions back to back for\n", r.Through[0].Workers)
	p("%s each: search the Seal-Tools index (4,076 tools) with the next Seal-Tools query, then open a plugin\n", fmtDur(r.Through[0].Duration))
	p("session, call the echo tool once and close it (the Seal-Tools tools have no code, so every session\n")
	p("calls echo). A session's first call takes a pooled instance when one is ready, else makes one:\n")
	p("restored from the plugin's copy-on-write snapshot (Linux, the default), or, in the rows marked\n")
	p("fresh instances, instantiated and initialised from scratch (snapshots off; docs/RUNTIME.md). Both\n")
	p("ways are measured in the same run, one after the other.\n\n")
	b.WriteString(throughputTable(r.Through).md())
	p("\n**Memory per session**: %d sessions kept open, each after one call (so each holds its own\n", r.Memory.Sessions)
	p("instance), against the runtime before them (compiled, one instance live). RSS counts a page\n")
	p("shared by several instances once for each; PSS divides it among them, so for restored instances,\n")
	p("which share their snapshot's pages until they write them, PSS is what each really costs.\n\n")
	b.WriteString(memoryTable(r.Memory, r.MemoryFresh).md())
	p("\n**Search latency from 100 to 100,000 tools.** Up to 4,076 the catalog is Seal-Tools' first N\n")
	p("tools; past it, all of Seal-Tools plus tools recombined from two random Seal-Tools entries (the\n")
	p("first's name with the second's last name word and a number, both descriptions, both parameter\n")
	p("lists). The recombined tools are near-duplicates of real ones, a hard case for recall. The same\n")
	p("sample of Seal-Tools queries is run on every size; recall@5 is given where every labelled tool is\n")
	p("in the catalog.\n\n")
	b.WriteString(scaleTable(r.Scale).md())
	p("\n![search p50 latency vs catalog size](bench-scale.svg)\n\n")
	p("Reproduce: `cd bench && go run . -only scale`.\n\n")

	// 5.
	p("## 5. Hot reload\n\n")
	if r.Reload.Err != "" {
		p("Not measured in this run: `%s` failed: %s\n\n", r.Reload.Command, r.Reload.Err)
	} else if r.Reload.Command != "" {
		p("From the moment a plugin unit's last file (manifest and module) is in place in a watched\n")
		p("directory to the moment the live catalog's search finds its tool, over %d drops, one at a time\n", r.Reload.Drops)
		p("(fsnotify events, debounced by 100 ms, then a new snapshot built beside the live one and swapped;\n")
		p("docs/RUNTIME.md, \"Hot reload\"): **p50 %s, max %s** (target p50 < 300 ms).\n\n", fmtDur(r.Reload.P50), fmtDur(r.Reload.Max))
		p("Reproduce: `%s` (or `cd bench && go run . -only reload`).\n\n", r.Reload.Command)
	}

	// Reading.
	p("## What the numbers say\n\n")
	b.WriteString(reading(r, vs))
	return b.String()
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// contextTargetOrder lists the deferred-catalog rows (the target's
// comparison) before the reference rows with built-ins.
func contextTargetOrder(rows []contextRow) []contextRow {
	var out []contextRow
	for _, bi := range []bool{false, true} {
		for _, c := range rows {
			if c.BuiltIns == bi {
				out = append(out, c)
			}
		}
	}
	return out
}
