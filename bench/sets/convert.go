package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/host/manifest"
)

// Converter describes one set and converts it from a source checkout.
type Converter struct {
	Name     string // folder name under bench/testdata/eval
	Title    string
	Repo     string // https URL of the source repository
	Paper    string
	Licence  string // as the repository states it
	Copy     bool   // the licence allows committing the converted files
	Language string
	Natural  string   // how natural the requests are, for the README
	Rules    []string // conversion rules, for the README
	Caveats  []string
	Convert  func(src *Source, s *Set) error
}

// result is a finished conversion.
type result struct {
	conv   Converter
	set    *Set
	files  []SourceFile
	commit string
}

// convert runs c on the checkout at root and checks its output.
func convert(c Converter, root, commit string) (*result, error) {
	if st, err := os.Stat(root); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", root)
	}
	if commit == "" {
		commit = gitCommit(root)
	}
	src := &Source{root: root}
	s := newSet()
	if err := c.Convert(src, s); err != nil {
		return nil, err
	}
	s.flush()
	if len(s.Tools()) == 0 || len(s.Queries()) == 0 {
		return nil, fmt.Errorf("no tools or no queries converted from %s", root)
	}
	if err := Check(s.Tools(), s.Queries()); err != nil {
		return nil, err
	}
	return &result{conv: c, set: s, files: src.read, commit: commit}, nil
}

// Check verifies what `toolshed eval` and the search rely on: tool names
// unique after folding, every label naming a tool, no empty request, and
// unique query ids.
func Check(tools []Tool, queries []Query) error {
	byFold := map[string]string{}
	byName := map[string]bool{}
	for _, t := range tools {
		k := manifest.FoldName(t.Name)
		if prev, dup := byFold[k]; dup {
			return fmt.Errorf("tools %q and %q fold to the same name", prev, t.Name)
		}
		byFold[k] = t.Name
		byName[t.Name] = true
	}
	ids := map[string]bool{}
	for i, q := range queries {
		if strings.TrimSpace(q.Query) == "" || len(q.Tools) == 0 {
			return fmt.Errorf("query %d (%s): empty request or no label", i+1, q.ID)
		}
		if q.ID == "" || ids[q.ID] {
			return fmt.Errorf("query %d: id %q empty or repeated", i+1, q.ID)
		}
		ids[q.ID] = true
		for _, l := range q.Tools {
			if !byName[l] {
				return fmt.Errorf("query %s: label %q names no tool", q.ID, l)
			}
		}
	}
	return nil
}

// write puts tools.jsonl, queries.jsonl and README.md into dir.
func (r *result) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tools, err := jsonLines(r.set.Tools())
	if err != nil {
		return err
	}
	queries, err := jsonLines(r.set.Queries())
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"tools.jsonl": tools, "queries.jsonl": queries, "README.md": []byte(r.readme())} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// jsonLines encodes each element on its own line, without escaping HTML
// characters or non-ASCII text (Chinese stays readable).
func jsonLines[T any](items []T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// readme renders the set's README.md from the converter's description and
// the counts of this run.
func (r *result) readme() string {
	c, st := r.conv, r.set.Stats
	tools, queries := r.set.Tools(), r.set.Queries()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s, converted for evaluating tool search by `bench/sets` (`go run ./sets -set %s`).\n\n", c.Name, c.Title, c.Name)
	fmt.Fprintf(&b, "- Source repo: %s\n", c.Repo)
	commit := r.commit
	if commit == "" {
		commit = "not recorded (pass -commit)"
	}
	fmt.Fprintf(&b, "- Snapshot commit: %s\n", commit)
	if c.Paper != "" {
		fmt.Fprintf(&b, "- Paper: %s\n", c.Paper)
	}
	fmt.Fprintf(&b, "- Licence: %s\n", c.Licence)
	fmt.Fprintf(&b, "- Language: %s\n", c.Language)
	fmt.Fprintf(&b, "- Source files (size in bytes, sha256 prefix):\n")
	for _, g := range groupFiles(r.files) {
		fmt.Fprintf(&b, "  - %s\n", g)
	}
	fmt.Fprintf(&b, "\n## Files here\n")
	fmt.Fprintf(&b, "- tools.jsonl: %s lines, sorted by name; `name`, `description`, `parameters` (JSON Schema object).\n", thousands(len(tools)))
	fmt.Fprintf(&b, "- queries.jsonl: %s lines, in source order; `query`, `tools` (the correct names, %.2f a query on average), `id`, `split` (source subset), `lang`.\n",
		thousands(len(queries)), meanLabels(queries))
	splits := map[string]int{}
	for _, q := range queries {
		splits[q.Split]++
	}
	fmt.Fprintf(&b, "- Queries by split: %s", counts(splits, "%s %s", ", "))
	fmt.Fprintf(&b, ".\n\n## How natural the requests are\n%s\n\n## Conversion\n", c.Natural)
	for _, rule := range c.Rules {
		fmt.Fprintf(&b, "- %s\n", rule)
	}
	fmt.Fprintf(&b, "- Tool names are unique after folding case and `_ - .` and spaces (the catalog's own rule): the first definition of a folded name is kept; ")
	fmt.Fprintf(&b, "%s later identical definitions merged, %s later differing definitions of the same name dropped, %s differently spelled names merged into the kept spelling.\n",
		thousands(st.Redefined), thousands(st.RedefinedDiffers), thousands(st.Spellings))
	if bad := unloadableNames(tools); len(bad) > 0 {
		fmt.Fprintf(&b, "- %s tool names are kept as the source writes them although a Toolshed manifest would refuse them (ASCII letter first, then letters, digits, `_` or `-`, at most 64), for example `%s`; `toolshed eval` reads them, a plugin could not declare them.\n",
			thousands(len(bad)), bad[0])
	}
	if st.Renamed > 0 {
		fmt.Fprintf(&b, "- %s tools renamed (see above) so that namesakes from separate source catalogs stay apart.\n", thousands(st.Renamed))
	}
	fmt.Fprintf(&b, "- Labels: %s resolved by dropping a `_N` call-number suffix; %s unresolvable, so %s queries dropped; %s repeated requests merged (labels joined).\n",
		thousands(st.NumberedLabels), thousands(st.UnresolvedLabels), thousands(st.DroppedQueries), thousands(st.MergedQueries))
	if len(st.Skipped) > 0 {
		fmt.Fprintf(&b, "- Source records left out: %s", counts(st.Skipped, "%s (%s)", "; "))
		fmt.Fprintf(&b, ".\n")
	}
	if len(c.Caveats) > 0 {
		fmt.Fprintf(&b, "\n## Caveats\n")
		for _, cv := range c.Caveats {
			fmt.Fprintf(&b, "- %s\n", cv)
		}
	}
	return b.String()
}

// manifestToolName is the manifest's rule for tool names (host/manifest),
// repeated here to count the source names a plugin could not declare.
var manifestToolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// unloadableNames returns the names, in catalog order, that a manifest
// would refuse.
func unloadableNames(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		if !manifestToolName.MatchString(t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// counts renders m sorted by key, each entry as format (key, count) and
// joined by sep.
func counts(m map[string]int, format, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, thousands(m[k]))
	}
	return strings.Join(parts, sep)
}

func meanLabels(qs []Query) float64 {
	if len(qs) == 0 {
		return 0
	}
	n := 0
	for _, q := range qs {
		n += len(q.Tools)
	}
	return float64(n) / float64(len(qs))
}

// thousands formats n with commas: 12345 -> "12,345".
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// manyFiles is the number of files of one folder past which the README
// lists the folder as one line.
const manyFiles = 8

// groupFiles renders the files read, one line each, except that a folder
// with more than manyFiles files becomes one line: its count, total size,
// and a sha256 over the files' own sha256 sums in name order.
func groupFiles(files []SourceFile) []string {
	byDir := map[string][]SourceFile{}
	for _, f := range files {
		d := path.Dir(f.Path)
		byDir[d] = append(byDir[d], f)
	}
	var out []string
	done := map[string]bool{}
	for _, f := range files {
		d := path.Dir(f.Path)
		group := byDir[d]
		if len(group) <= manyFiles {
			out = append(out, fmt.Sprintf("`%s` (%s B, sha256 %s)", f.Path, thousands(f.Size), f.SHA256[:16]))
			continue
		}
		if done[d] {
			continue
		}
		done[d] = true
		sorted := append([]SourceFile(nil), group...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
		h := sha256.New()
		size := 0
		for _, g := range sorted {
			fmt.Fprintf(h, "%s  %s\n", g.SHA256, path.Base(g.Path))
			size += g.Size
		}
		out = append(out, fmt.Sprintf("`%s/` %s files (%s B; sha256 of their `sha256sum` lines in name order %s)",
			d, thousands(len(group)), thousands(size), hex.EncodeToString(h.Sum(nil))[:16]))
	}
	return out
}
