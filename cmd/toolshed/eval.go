package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/toolshed/toolshed/internal/embed"
	"github.com/toolshed/toolshed/internal/evalrun"
	"github.com/toolshed/toolshed/search"
)

func cmdEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	toolsPath := fs.String("tools", "", "catalog in JSON Lines (name, description, parameters)")
	queriesPath := fs.String("queries", "", "queries in JSON Lines (query, tools)")
	asJSON := fs.Bool("json", false, "print JSON")
	baseline := fs.Bool("baseline", false, "also run the naive BM25 baseline in the same process")
	zhDict := fs.String("zh-dict", "", "Chinese dictionary file (gse format) instead of the embedded compact one")
	noLexicon := fs.Bool("no-lexicon", false, "turn off Chinese-English query expansion (for measurements)")
	noBigrams := fs.Bool("no-bigrams", false, "turn off Chinese character bigrams (for measurements)")
	noSynonyms := fs.Bool("no-synonyms", false, "turn off same-language lexicon synonyms (for measurements)")
	weights := fs.String("weights", "", "search.Weights as JSON over the defaults, e.g. '{\"K1\":1.5}' (for measurements)")
	cut := fs.Float64("cut", 0, "apply tool_search's relevance cut at `RATIO` of the best score (0: none; tool_search cuts at 0.2)")
	cands := fs.Int("candidates", 0, "also measure the LLM candidate lists of at most `TOKENS` tokens (tool_search's default: 6000) over the queries keyword misses")
	embedURL := fs.String("embed", "", "with --candidates, also measure the lists with the semantic stage, through this OpenAI-compatible embeddings `URL` (e.g. http://127.0.0.1:8090/v1; key from $OPENAI_API_KEY)")
	embedModel := fs.String("embed-model", "text-embedding-3-small", "the --embed model")
	synth := fs.Int("synth", 0, "grow the catalog to `N` tools with recombined distractors (as make bench's scale section)")
	sampleN := fs.Int("sample", 0, "run `N` queries spread evenly over the set (0: all)")
	halfName := fs.String("half", "all", "run the `HALF` of the requests: tune, test or all (docs/SEARCH.md: the split is fixed by a hash of each request)")
	var lexicons listFlag
	fs.Var(&lexicons, "lexicon", "extra Chinese-English lexicon `FILE` (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed eval --tools TOOLS.jsonl --queries QUERIES.jsonl [--json] [--baseline] [flags]\n\n"+
			"Measures tool search on a labelled set (docs/SEARCH.md: the format, and where the public\n"+
			"Seal-Tools and MetaTool sets come from).")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *toolsPath == "" || *queriesPath == "" || len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	if *embedURL != "" && *cands <= 0 {
		fmt.Fprintln(stderr, "toolshed eval: --embed measures candidate lists: give --candidates 6000 too")
		return errUsage
	}
	tools, err := evalrun.ReadTools(*toolsPath)
	if err != nil {
		return err
	}
	queries, err := evalrun.ReadQueries(*queriesPath)
	if err != nil {
		return err
	}
	half, ok := evalrun.ParseHalf(*halfName)
	if !ok {
		return fmt.Errorf("--half %q: want tune, test or all", *halfName)
	}
	if *synth > 0 {
		tools = evalrun.Synth(tools, *synth)
	}
	queries = evalrun.Sample(evalrun.Split(queries, half), *sampleN)
	cfg := &search.Config{NoLexicon: *noLexicon, NoBigrams: *noBigrams, Lexicons: lexicons}
	if *zhDict != "" {
		cfg.Chinese = search.NewSegmenter(*zhDict)
	}
	w := search.DefaultWeights
	if *weights != "" {
		dec := json.NewDecoder(strings.NewReader(*weights))
		dec.DisallowUnknownFields() // a misspelt weight must not be measured as the default
		if err := dec.Decode(&w); err != nil {
			return fmt.Errorf("--weights: %w", err)
		}
	}
	if *noSynonyms {
		w.Synonym = 0
	}
	cfg.Weights = &w
	ts, dur, heap, err := evalrun.Build(func() (evalrun.Searcher, error) { return evalrun.BuildToolshedCut(tools, cfg, *cut) })
	if err != nil {
		return err
	}
	rep := evalrun.Run(ts, queries)
	rep.Engine, rep.Tools = "toolshed", len(tools)
	rep.IndexMS, rep.HeapMB = ms(dur), round2(heap)
	if *cands > 0 {
		cr, err := evalrun.Candidates(ts.(evalrun.Toolshed).Index, tools, queries, search.DefaultCandidateTools, *cands, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "candidates (budget %d tokens, at most %d tools): %d queries with no correct tool in the keyword top 5; "+
			"a correct tool in the list for %.4f of them; list: %.1f tools on %.1f lines (%.1f with the first sentence, the rest with first words), %.0f tokens on average\n\n",
			cr.Budget, search.DefaultCandidateTools, cr.Queries, cr.Recall, cr.MeanTools, cr.MeanLines, cr.MeanFull, cr.MeanTokens)
		if *embedURL != "" {
			e := &embed.Client{BaseURL: strings.TrimRight(*embedURL, "/"), Model: *embedModel, Key: os.Getenv("OPENAI_API_KEY")}
			near, err := evalrun.Semantic(context.Background(), e, tools, queries)
			if err != nil {
				return fmt.Errorf("--embed: %w", err)
			}
			cs, err := evalrun.Candidates(ts.(evalrun.Toolshed).Index, tools, queries, search.DefaultCandidateTools, *cands, near)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "with the semantic stage (%s): a correct tool in the list for %.4f of those %d queries (%.4f of all %d)\n\n",
				*embedModel, cs.Recall, cs.Queries, cs.RecallAll, cs.All)
		}
	}
	reports := []evalrun.Report{rep}
	if *baseline {
		bs, bdur, bheap, err := evalrun.Build(func() (evalrun.Searcher, error) { return evalrun.BuildBaseline(tools) })
		if err != nil {
			return err
		}
		b := evalrun.Run(bs, queries)
		b.Engine, b.Tools = "baseline-bm25", len(tools)
		b.IndexMS, b.HeapMB = ms(bdur), round2(bheap)
		reports = append(reports, b)
		runtime.KeepAlive(bs)
	}
	// Alive until here, so each heap figure is its own engine's.
	runtime.KeepAlive(ts)
	runtime.KeepAlive(tools)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if len(reports) == 1 {
			return enc.Encode(rep)
		}
		reports[1].PerQuery = nil
		v := struct {
			evalrun.Report
			Baseline evalrun.Report `json:"baseline"`
		}{reports[0], reports[1]}
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "%s, %s\n\n", plural(len(tools), "tool"), plural(len(queries), "query"))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "engine\trecall@1\trecall@5\trecall@10\thit@1\thit@5\tall@10\tMRR\tfound@5\tprec@5\tindex ms\theap MiB\tp50 µs\tp99 µs\t\n")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.2f\t%.4f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.Engine,
			r.Recall["1"], r.Recall["5"], r.Recall["10"], r.Hit["1"], r.Hit["5"], r.AllFound, r.MRR, r.Found5, r.Precision5,
			r.IndexMS, r.HeapMB, r.QueryUSP50, r.QueryUSP99)
	}
	return tw.Flush()
}

func ms(d interface{ Microseconds() int64 }) float64 { return round2(float64(d.Microseconds()) / 1e3) }

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
