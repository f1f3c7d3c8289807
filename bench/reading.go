package main

import (
	"fmt"
	"strings"
)

// reading is the report's commentary. Every number in it is taken from
// this run's results; the explanations say why, and where Toolshed loses.
func reading(r *results, vs []searchVerdict) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	// Search.
	p("**Search.** ")
	var wins, slow []string
	for i, v := range vs {
		s := r.Search[i]
		wins = append(wins, fmt.Sprintf("%s %+.1f points of recall@5 (%s vs %s)", v.set, v.recallGain, f4(s.Rows[0].Recall5), f4(engineRow(s, v.bestBleve).Recall5)))
		if v.p50Ratio < 5 {
			slow = append(slow, fmt.Sprintf("%s (%s)", v.set, ratio(v.p50Ratio)))
		}
	}
	p("Against the better of the two bleve configurations Toolshed gains %s. ", strings.Join(wins, "; "))
	p("The gains come from what bleve's standard analyzers do not do: split identifiers (bleve keeps\n")
	p("`getWeatherForecast` as one token, so tool names hardly match a request), weigh fields, and, on\n")
	p("the Chinese set, expand Chinese requests into the English of the tool descriptions through the\n")
	p("lexicon (CJK bigrams cannot meet English text at all). ")
	p("Toolshed's median query is %s faster than bleve's on %s, because it scores by adding\n", ratios(vs), joinSets(vs))
	p("BM25F weights precomputed at build time over flat posting arrays, where bleve builds a searcher\n")
	p("tree per query and scores each posting through its segment abstraction. ")
	p("On the small Chinese catalog a query's cost is its analysis rather than its scoring: the\n")
	p("dictionary cut (a walk of a character trie per position), character bigrams and lexicon\n")
	p("look-ups, where bleve's CJK analyzer only cuts bigrams. ")
	if len(slow) > 0 {
		p("**The 5× latency target is missed on %s.** ", strings.Join(slow, ", "))
	}
	// Build and heap.
	var heavier, slower []string
	for _, s := range r.Search {
		ts, bl := s.Rows[0], engineRow(s, "bleve (_all)")
		if ts.HeapMiB > bl.HeapMiB {
			heavier = append(heavier, fmt.Sprintf("%s (%s vs %s)", s.Name, mib(ts.HeapMiB), mib(bl.HeapMiB)))
		}
		if float64(ts.Build) > 1.25*float64(bl.Build) { // closer than that is noise here
			slower = append(slower, fmt.Sprintf("%s (%s vs %s)", s.Name, fmtDur(ts.Build), fmtDur(bl.Build)))
		}
	}
	if len(slower) > 0 {
		p("Toolshed builds its index more slowly than bleve on %s", strings.Join(slower, ", "))
		p(" (the Chinese set's figure includes loading the compact Chinese dictionary once). ")
	}
	if len(heavier) > 0 {
		p("Its index takes more heap than bleve's on %s: the lexicon's expansion tables and a memo\n", strings.Join(heavier, ", "))
		p("of analysed words are built per index, and the Chinese dictionary is held once loaded. ")
	}
	p("The naive BM25 shows what the analysis is worth: it indexes fastest and smallest and finds least.\n\n")

	// Context.
	if len(r.Context) > 0 {
		p("**Context.** ")
		first, last := r.Context[0], r.Context[0]
		for _, c := range r.Context {
			if c.BuiltIns {
				last = c
			}
		}
		p("With the default built-ins, Toolshed sends about %s tokens of tool definitions in round 1 and\n", thousands(int(first.Round1)))
		p("about %s once %.1f tools are found, whatever the catalog's size; sending every tool costs\n", thousands(int(last.After)), last.Found)
		p("%s tokens at 10 tools and %s at %s. ", thousands(int(first.AllOn)), thousands(int(last.AllOn)), thousands(last.Tools))
		var miss []string
		for _, c := range r.Context {
			if c.Tools >= 50 && c.SavedPct < 90 && !c.BuiltIns {
				miss = append(miss, fmt.Sprintf("%s tools (%.1f%%)", thousands(c.Tools), c.SavedPct))
			}
		}
		if len(miss) == 0 {
			p("Deferring the catalog saves at least 90%% of the tool-definition tokens per round from 50 tools up. ")
		} else {
			p("**The 90%% target is missed at %s**: `tool_search` and the found tools are a fixed cost of\n", strings.Join(miss, ", "))
			p("several hundred tokens, which a few dozen Seal-Tools definitions (%.0f tokens each on average\n", perTool(r.Context))
			p("here) do not outweigh ten times over. ")
		}
		if b, ok := builtinTokens(r.Context); ok {
			p("Tools that are always on in both setups lower the ratio without being a cost of deferral: with\n")
			p("the two default built-ins (%s tokens) the saving is ", thousands(int(b)))
			var parts []string
			for _, c := range r.Context {
				if c.BuiltIns && c.Tools >= 50 {
					parts = append(parts, fmt.Sprintf("%.1f%% at %s tools", c.SavedPct, thousands(c.Tools)))
				}
			}
			p("%s. ", strings.Join(parts, ", "))
			for _, c := range r.Context {
				if c.BuiltIns && c.Tools == 50 && c.SavedPct < 90 {
					p("At 50 tools 90%% would leave %s tokens per round, and the built-ins with `tool_search`\n", thousands(int(c.AllOn/10)))
					p("take %s of them before any tool is found. ", thousands(int(c.Round1)))
				}
			}
		}
		p("Small catalogs gain little from deferral and pay a search round for it; a catalog of\n")
		p("thousands could not be sent at all within most models' context.\n\n")
	}

	// Calls.
	if len(r.Calls) >= 5 {
		native, warm, pool, nopool, proc := r.Calls[0], r.Calls[1], r.Calls[2], r.Calls[3], r.Calls[4]
		p("**Plugin calls.** A warm wasm call costs %s against %s natively (%s): the guest's work\n", fmtDur(warm.Mean), fmtDur(native.Mean), ratio(warm.VsNative))
		p("(decoding the arguments, encoding the result, Go's runtime) runs much slower compiled to\n")
		p("WebAssembly than natively, and wazero's\n")
		p("`WithCloseOnContextDone` (what lets the host stop a runaway plugin) adds a check to every loop\n")
		p("(docs/RUNTIME.md). A session's first call costs %s with the pool and %s without it. A fresh\n", fmtDur(pool.Mean), fmtDur(nopool.Mean))
		p("process per call costs %s, %s a warm wasm call", fmtDur(proc.Mean), ratio(proc.VsWarmWasm))
		if proc.Mean < pool.Mean {
			p(", and **less than a session's first wasm call** (%s): on this machine starting a small static Go\n", ratio(float64(pool.Mean)/float64(proc.Mean)))
			p("binary is cheap, and a first call pays the instance's setup and the call. ")
		} else {
			p("; a session's first wasm call from the pool is %s cheaper. ", ratio(float64(proc.Mean)/float64(pool.Mean)))
		}
		p("What the sandbox buys for that price is isolation a process does not give by itself (no file\n")
		p("system, network or environment unless granted, memory and time caps) and per-request state that\n")
		p("never leaks; the price itself is where Toolshed loses most, against native code.\n\n")
	}

	// Scale.
	if len(r.Through) >= 2 {
		so, sc := r.Through[0], r.Through[1]
		p("**Scale.** With %d workers on %d cores, search alone sustains %s sessions/s; with one plugin\n", sc.Workers, r.Machine.GOMAXPROCS, thousands(int(so.PerSecond)))
		p("call each, %.0f sessions/s (%.0f%% of first calls served from the pool).", sc.PerSecond, 100*sc.PoolHitRate)
		if len(r.Through) >= 3 {
			fr := r.Through[2]
			p(" With snapshots off, every\n")
			p("instance instantiated and initialised from scratch, the same run gave %.0f sessions/s (snapshots: %s):\n", fr.PerSecond, ratio(sc.PerSecond/fr.PerSecond))
			p("a Go reactor's initialiser is CPU work a pool only moves, while a restored instance is a\n")
			p("mapping of the snapshot and a few globals")
			if len(r.Calls) >= 6 {
				p(" (a first call without a pool: %s restored, %s fresh, table 3)", fmtDur(r.Calls[3].P50), fmtDur(r.Calls[5].P50))
			}
			p(".")
		}
		p(" A live session holding an instance costs\n")
		p("%s of Go heap (%s resident, %s proportional)", mib(r.Memory.HeapPerSession), mibOr(r.Memory.RSSPerSession), mibOr(r.Memory.PSSPerSession))
		if m := r.MemoryFresh; m.Sessions > 0 {
			p("; a fresh instance %s of heap, %s resident, %s proportional", mib(m.HeapPerSession), mibOr(m.RSSPerSession), mibOr(m.PSSPerSession))
		}
		p(". ")
	}
	if len(r.Scale) > 0 {
		first, last := scaleFor(r.Scale, "Toolshed", true), scaleFor(r.Scale, "Toolshed", false)
		bf, bl := scaleFor(r.Scale, "bleve (_all)", true), scaleFor(r.Scale, "bleve (_all)", false)
		p("From %s to %s tools Toolshed's p50 grows %s (%s → %s) and bleve's %s (%s → %s);\n",
			thousands(first.Tools), thousands(last.Tools), ratio(float64(last.P50)/float64(first.P50)), fmtDur(first.P50), fmtDur(last.P50),
			ratio(float64(bl.P50)/float64(bf.P50)), fmtDur(bf.P50), fmtDur(bl.P50))
		p("at %s tools Toolshed is %s faster than bleve. Past about 10,000 tools the cost is\n", thousands(last.Tools), ratio(float64(bl.P50)/float64(last.P50)))
		p("the postings of common words (`get`, `information`, `data` are in a large share of the catalog),\n")
		p("not the final scan over the score array, so a sparse accumulator alone would not help much;\n")
		p("pruning (MaxScore or WAND) would. ")
		var lose []string
		for _, t := range r.Scale {
			if t.Engine != "Toolshed" || t.Recall5 < 0 {
				continue
			}
			for _, o := range r.Scale {
				if o.Tools == t.Tools && strings.HasPrefix(o.Engine, "bleve") && o.Recall5 > t.Recall5 {
					lose = append(lose, fmt.Sprintf("%s tools (%s vs %s)", thousands(t.Tools), f4(t.Recall5), f4(o.Recall5)))
				}
			}
		}
		if len(lose) > 0 {
			p("**On the recombined catalogs bleve's recall@5 is higher at %s**. A\n", strings.Join(lose, ", "))
			p("recombined tool is twice as long as a real one (two descriptions, two parameter lists) and so\n")
			p("matches more of a long request's words; bleve normalises length hard (b 0.75 over one field),\n")
			p("Toolshed more gently (b from 0.3 on names to 0.75 on descriptions), so more of the long\n")
			p("near-duplicates get past it. Stronger normalisation would push them down, at a cost on\n")
			p("catalogs of short descriptions such as MetaTool's: the field weights were tuned on the real\n")
			p("sets (docs/SEARCH.md).\n\n")
		} else {
			p("Recall falls for every engine as the near-duplicates crowd in; Toolshed stays ahead.\n\n")
		}
	}

	// Reload.
	if r.Reload.Err == "" && r.Reload.P50 > 0 {
		p("**Hot reload.** A dropped plugin is searchable after %s at the median (max %s); most of it is\n", fmtDur(r.Reload.P50), fmtDur(r.Reload.Max))
		p("the 100 ms debounce that waits for a copy to finish.\n")
	}
	return b.String()
}

func engineRow(s setResult, name string) quality {
	for _, q := range s.Rows {
		if q.Engine == name {
			return q
		}
	}
	return s.Rows[0]
}

func ratios(vs []searchVerdict) string {
	var out []string
	for _, v := range vs {
		out = append(out, ratio(v.p50Ratio))
	}
	return strings.Join(out, ", ")
}

func joinSets(vs []searchVerdict) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.set)
	}
	return strings.Join(out, ", ") + " respectively"
}

// perTool is the mean tokens of one catalog tool's definition.
func perTool(rows []contextRow) float64 {
	var a, b contextRow
	for _, c := range rows {
		if c.BuiltIns {
			if a.Tools == 0 {
				a = c
			}
			b = c
		}
	}
	if b.Tools == a.Tools {
		return 0
	}
	return (b.AllOn - a.AllOn) / float64(b.Tools-a.Tools)
}

func mibOr(v float64) string {
	if v < 0 {
		return "unknown"
	}
	return mib(v)
}

// scaleFor is an engine's row at the smallest (first) or largest size.
func scaleFor(rows []scaleRow, engine string, first bool) scaleRow {
	var out scaleRow
	for _, r := range rows {
		if r.Engine == engine {
			if first {
				return r
			}
			out = r
		}
	}
	return out
}

// builtinTokens is the tokens of the default always-on built-ins: the
// difference between the always-on sides with and without them.
func builtinTokens(rows []contextRow) (float64, bool) {
	for _, a := range rows {
		for _, b := range rows {
			if a.BuiltIns && !b.BuiltIns && a.Tools == b.Tools {
				return a.AllOn - b.AllOn, true
			}
		}
	}
	return 0, false
}
