package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/host/manifest"
)

// Tool is one line of tools.jsonl.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Query is one line of queries.jsonl.
type Query struct {
	Query string   `json:"query"`
	Tools []string `json:"tools"`
	ID    string   `json:"id"`
	Split string   `json:"split"`
	Lang  string   `json:"lang"`
}

// Stats counts what a conversion merged, renamed and dropped; the README
// reports every figure.
type Stats struct {
	Redefined        int // later definitions of a folded name identical to the kept one
	RedefinedDiffers int // later definitions of a folded name that differ from the kept one (first kept)
	Spellings        int // definitions whose name folds to a kept one but is spelled otherwise
	Renamed          int // tools renamed to tell apart namesakes the source keeps in separate catalogs
	NumberedLabels   int // labels resolved by dropping a "_N" call-number suffix
	UnresolvedLabels int // labels naming no tool of the catalog
	DroppedQueries   int // queries dropped because a label did not resolve
	MergedQueries    int // queries whose text repeated an earlier one (labels joined)
	Skipped          map[string]int
}

// skip counts a source record left out on purpose, by reason.
func (s *Stats) skip(reason string) {
	if s.Skipped == nil {
		s.Skipped = map[string]int{}
	}
	s.Skipped[reason]++
}

// Set is a converted set under construction. Tools are keyed by their
// folded name (manifest.FoldName: case and _ - . and spaces ignored), so no
// two tools of the output can be confused by the catalog; the first
// definition of a folded name wins and later ones are counted. Not safe for
// concurrent use.
type Set struct {
	tools   map[string]*Tool // by folded name
	queries []Query
	byText  map[string]int // query text -> index in queries
	later   []offeredQuery // AddOfferedQuery's, resolved by flush
	Stats   Stats
	Unknown []string // "id: label" of every unresolved label, in input order
}

func newSet() *Set {
	return &Set{tools: map[string]*Tool{}, byText: map[string]int{}}
}

// AddTool adds a definition and returns the name the catalog keeps for it.
// params is normalised to a JSON Schema object (normalizeSchema).
func (s *Set) AddTool(name, description string, params any) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("tool with no name")
	}
	p, err := json.Marshal(normalizeSchema(params))
	if err != nil {
		return "", fmt.Errorf("tool %q: parameters: %w", name, err)
	}
	t := Tool{Name: name, Description: oneSpace(description), Parameters: p}
	key := manifest.FoldName(name)
	if key == "" {
		return "", fmt.Errorf("tool %q: name is only separators", name)
	}
	kept, ok := s.tools[key]
	if !ok {
		s.tools[key] = &t
		return name, nil
	}
	switch {
	case kept.Name != name:
		s.Stats.Spellings++
	case kept.Description == t.Description && string(kept.Parameters) == string(t.Parameters):
		s.Stats.Redefined++
	default:
		s.Stats.RedefinedDiffers++
	}
	return kept.Name, nil
}

// Resolve returns the catalog's name for label, folding it the catalog's
// way.
func (s *Set) Resolve(label string) (string, bool) {
	if t, ok := s.tools[manifest.FoldName(label)]; ok {
		return t.Name, true
	}
	return "", false
}

type offeredQuery struct {
	q       Query
	labels  []string
	offered []string
}

// AddOfferedQuery adds a query of a set whose samples each offer their own
// tools (offered: the catalog names AddTool returned for them). It is
// resolved after the whole catalog is read (flush), so that its labels map
// first to the tools the sample offered (Offered) and only then to the
// catalog.
func (s *Set) AddOfferedQuery(q Query, labels, offered []string) {
	s.later = append(s.later, offeredQuery{q, labels, offered})
}

// flush adds the queries of AddOfferedQuery in the order they came.
func (s *Set) flush() {
	for _, p := range s.later {
		s.AddQuery(p.q, s.Offered(p.labels, p.offered))
	}
	s.later = nil
}

// Offered maps labels to the names of the tools a sample itself offered
// (sets whose samples each come with their own tool list): a label folding
// to an offered name becomes that name, and a label such as "route_tool_1"
// that numbers the second call of "route_tool" in a parallel answer becomes
// "route_tool" when no offered tool is named "route_tool_1". Other labels
// are returned unchanged, for AddQuery to resolve against the catalog or
// report.
func (s *Set) Offered(labels, offered []string) []string {
	byFold := map[string]string{}
	for _, o := range offered {
		byFold[manifest.FoldName(o)] = o
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = l
		if o, ok := byFold[manifest.FoldName(l)]; ok {
			out[i] = o
			continue
		}
		if n := lastNumber(l); n != "" {
			if o, ok := byFold[manifest.FoldName(strings.TrimSuffix(l, "_"+n))]; ok {
				out[i] = o
				s.Stats.NumberedLabels++
			}
		}
	}
	return out
}

// lastNumber returns the digits after the last "_" of s, or "".
func lastNumber(s string) string {
	i := strings.LastIndexByte(s, '_')
	if i < 0 || i == len(s)-1 {
		return ""
	}
	for _, r := range s[i+1:] {
		if r < '0' || r > '9' {
			return ""
		}
	}
	return s[i+1:]
}

// AddQuery resolves labels and adds the query. A query with a label that
// resolves to no tool is dropped whole (its other labels would make it an
// easier question than the source asks) and reported in Unknown. A query
// whose text repeats an earlier one joins its labels to the earlier one's.
func (s *Set) AddQuery(q Query, labels []string) {
	q.Query = strings.TrimSpace(q.Query)
	if q.Query == "" {
		s.Stats.skip("empty request")
		return
	}
	var names []string
	ok := true
	for _, l := range labels {
		n, found := s.Resolve(l)
		if !found {
			s.Stats.UnresolvedLabels++
			s.Unknown = append(s.Unknown, q.ID+": "+l)
			ok = false
			continue
		}
		names = appendNew(names, n)
	}
	if !ok {
		s.Stats.DroppedQueries++
		return
	}
	if len(names) == 0 {
		s.Stats.skip("no label")
		return
	}
	if i, dup := s.byText[q.Query]; dup {
		s.Stats.MergedQueries++
		for _, n := range names {
			s.queries[i].Tools = appendNew(s.queries[i].Tools, n)
		}
		return
	}
	q.Tools = names
	s.byText[q.Query] = len(s.queries)
	s.queries = append(s.queries, q)
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Tools returns the catalog sorted by name.
func (s *Set) Tools() []Tool {
	out := make([]Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Queries returns the queries in source order (files by name, records in
// file order), which the converters make deterministic.
func (s *Set) Queries() []Query { return s.queries }

// oneSpace trims s and collapses runs of white space into one space.
func oneSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// normalizeSchema turns a source's parameter description into a JSON Schema
// object: nil becomes an object with no properties; Python and Java type
// names (dict, str, int, float, bool, list, tuple) become JSON Schema ones;
// an object without properties gets an empty map, so every catalog line has
// the same shape.
func normalizeSchema(v any) map[string]any {
	m, _ := normalizeValue(v).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["type"] = "object"
	if _, ok := m["properties"].(map[string]any); !ok {
		m["properties"] = map[string]any{}
	}
	delete(m, "$schema")
	return m
}

var typeNames = map[string]string{
	"dict": "object", "object": "object", "str": "string", "string": "string",
	"int": "integer", "integer": "integer", "long": "integer", "float": "number",
	"number": "number", "double": "number", "bool": "boolean", "boolean": "boolean",
	"list": "array", "tuple": "array", "array": "array", "null": "null",
}

// normalizeValue maps "type" values recursively: known names to their JSON
// Schema spelling, unknown ones (datetime, any, date) to "string" with the
// source's name kept in "format" when it carries meaning.
func normalizeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeValue(e)
		}
		if t, ok := x["type"].(string); ok {
			if js, known := typeNames[strings.ToLower(t)]; known {
				out["type"] = js
			} else {
				out["type"] = "string"
				if _, has := out["format"]; !has && t != "" && !strings.EqualFold(t, "any") {
					out["format"] = t
				}
			}
		}
		if props, ok := out["properties"].(map[string]any); ok {
			for k, p := range props {
				if _, isMap := p.(map[string]any); !isMap {
					delete(props, k)
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeValue(e)
		}
		return out
	}
	return v
}

// Namesakes records which source catalogs define each folded tool name, so
// that a name two catalogs share can be qualified with its catalog in both
// while every other name stays as written. The zero value is not usable:
// make one with make(Namesakes). Not safe for concurrent use.
type Namesakes map[string]map[string]bool

// Add records that catalog defines name.
func (n Namesakes) Add(catalog, name string) {
	k := manifest.FoldName(name)
	if n[k] == nil {
		n[k] = map[string]bool{}
	}
	n[k][catalog] = true
}

// Qualify returns prefix + "_" + name when name is defined by more than
// one catalog, else name.
func (n Namesakes) Qualify(prefix, name string) string {
	if len(n[manifest.FoldName(name)]) > 1 {
		return prefix + "_" + name
	}
	return name
}
