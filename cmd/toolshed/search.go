package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/search"
)

type searchResult struct {
	Name        string   `json:"name"`
	Plugin      string   `json:"plugin"`
	Score       float64  `json:"score"`
	Description string   `json:"description"`
	Matched     []string `json:"matched"`
}

func cmdSearch(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	fs := newFlags("search", stderr)
	dir := fs.String("plugins", "", pluginDirUsage)
	limit := fs.Int("limit", search.DefaultLimit, "number of results")
	asJSON := fs.Bool("json", false, "print JSON")
	stats := fs.Bool("stats", false, "print timings and heap to stderr")
	zhDict := fs.String("zh-dict", "", "Chinese dictionary `FILE` (gse format) instead of the embedded compact one")
	var lexicons listFlag
	fs.Var(&lexicons, "lexicon", "extra Chinese-English lexicon `FILE` (repeatable; see docs/SEARCH.md)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed search [--plugins DIR] [--limit N] [--json] [--stats] [--lexicon FILE] QUERY")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(pos, " "))
	if query == "" {
		fs.Usage()
		return errUsage
	}
	if *limit < 1 || *limit > 100 {
		return fmt.Errorf("--limit %d is out of range (1 to 100)", *limit)
	}
	cfg := &search.Config{Lexicons: lexicons}
	if *zhDict != "" {
		cfg.Chinese = search.NewSegmenter(*zhDict)
	}
	if *dir, err = pluginDir(*dir); err != nil {
		return err
	}
	snap, err := loadCatalog(*dir, cfg)
	if err != nil {
		return err
	}
	loaded := time.Now()
	for _, e := range snap.Errors {
		fmt.Fprintf(stderr, "toolshed: skipped %s\n", indent(e.Error()))
	}
	res, err := snap.Search(query, *limit)
	if err != nil {
		return err
	}
	done := time.Now()
	out := searchResults(snap, res)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		v := struct {
			Results []searchResult `json:"results"`
			Unknown []string       `json:"unknown,omitempty"`
		}{out, res.Unknown}
		if err := enc.Encode(v); err != nil {
			return err
		}
	} else {
		if len(out) == 0 {
			fmt.Fprintf(stdout, "no tool matches %q among %s\n", query, plural(len(snap.Tools), "tool"))
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for i, r := range out {
			fmt.Fprintf(tw, "%d.\t%s\t%s\t%.3f\t%s\n", i+1, r.Name, r.Plugin, r.Score, firstLine(r.Description, 70))
			if len(r.Matched) > 0 {
				fmt.Fprintf(tw, "\t\t\t\tmatched: %s\n", strings.Join(r.Matched, ", "))
			}
		}
		tw.Flush()
		for _, u := range res.Unknown {
			fmt.Fprintf(stdout, "unknown tool: %s\n", u)
		}
	}
	if *stats {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		fmt.Fprintf(stderr, "catalog: %d tools, %d terms, loaded in %s; query %s; start to first result %s; heap %.1f MiB\n",
			len(snap.Tools), snap.Index.Terms(), loaded.Sub(start).Round(time.Microsecond),
			done.Sub(loaded).Round(time.Microsecond), done.Sub(start).Round(time.Microsecond), float64(m.HeapAlloc)/(1<<20))
	}
	return nil
}

// searchResults is the JSON form of a search, shared by "search --json"
// and the server's /v1/search.
func searchResults(snap *catalog.Snapshot, res search.Result) []searchResult {
	out := make([]searchResult, 0, len(res.Hits))
	for _, h := range res.Hits {
		t, _ := snap.Tool(h.Name)
		out = append(out, searchResult{Name: h.Name, Plugin: h.Plugin, Score: h.Score,
			Description: t.Spec.Description, Matched: nonNil(h.Matched)})
	}
	return out
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	r := []rune(s)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
