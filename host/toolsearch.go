package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/catalog"
)

// ToolSearchName is the name of the search tool.
const ToolSearchName = "tool_search"

// Mode is how tool_search finds tools.
type Mode string

// Search modes. HYBRID (the default) searches by keyword and asks the LLM
// only when keywords find nothing.
const (
	ModeKeyword Mode = "keyword"
	ModeLLM     Mode = "llm"
	ModeHybrid  Mode = "hybrid"
)

// SearchOptions configure tool_search. Zero values are defaults.
type SearchOptions struct {
	Mode  Mode // default ModeHybrid
	Limit int  // tools per search when the model gives none (default 5, at most 20)
	// Budget is how many searches one request may make (default 8).
	Budget int
	// LLMClient and LLMModel choose tools in LLM mode; nil/empty: the main ones.
	LLMClient *openai.Client
	LLMModel  string
	// MaxCandidates bounds the list sent to the LLM (default 100): larger
	// catalogs are pre-filtered by keyword recall first.
	MaxCandidates int
	// MinScore: in HYBRID mode, a best keyword hit scoring below it counts
	// as low confidence and the LLM is asked too (0: only when keywords
	// find nothing).
	MinScore float64
}

func (o SearchOptions) withDefaults() SearchOptions {
	if o.Mode == "" {
		o.Mode = ModeHybrid
	}
	if o.Limit <= 0 {
		o.Limit = 5
	}
	if o.Budget <= 0 {
		o.Budget = 8
	}
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = 100
	}
	return o
}

// SearchRecord says how one tool_search call was answered.
type SearchRecord struct {
	Query string   `json:"query"`
	Mode  Mode     `json:"mode"`
	Path  string   `json:"path"` // keyword, llm, llm-failed, cached, budget, invalid
	Found []string `json:"found"`
	Error string   `json:"error,omitempty"`
}

var toolSearchParams = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool should do, in a few words (any language)"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"How many tools at most (default 5)"}},` +
	`"required":["query"]}`)

func (h *Host) toolSearchDescription() string {
	return "Find specialised tools that are not loaded yet (data, SQL, charts, calculation and more). " +
		"Describe what you need; the tools found become callable from your next step on. " +
		"Use it only when your current tools cannot do the job."
}

type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

func (s *Session) toolSearch(ctx context.Context, raw string) (Result, *SearchRecord) {
	opts := s.host.opts.Search
	rec := &SearchRecord{Mode: opts.Mode}
	var a searchArgs
	if err := json.Unmarshal([]byte(raw), &a); err != nil || strings.TrimSpace(a.Query) == "" {
		rec.Path = "invalid"
		return Result{Content: `tool_search needs {"query": "what the tool should do"}`, IsError: true}, rec
	}
	rec.Query = a.Query
	limit := a.Limit
	if limit <= 0 {
		limit = opts.Limit
	}
	limit = min(limit, 20)
	key := fmt.Sprintf("%d\x00%s", limit, strings.ToLower(strings.Join(strings.Fields(a.Query), " ")))
	s.mu.Lock()
	if text, ok := s.searches[key]; ok {
		s.mu.Unlock()
		rec.Path = "cached"
		return Result{Content: text}, rec
	}
	if s.nSearches >= opts.Budget {
		s.mu.Unlock()
		rec.Path = "budget"
		return Result{Content: fmt.Sprintf("search budget exhausted: this request already searched %d times. "+
			"Work with the tools you have, or answer the user.", opts.Budget), IsError: true}, rec
	}
	s.nSearches++
	s.mu.Unlock()

	found, best := s.keyword(a.Query, limit)
	rec.Path = "keyword"
	askLLM := opts.Mode == ModeLLM ||
		(opts.Mode == ModeHybrid && (len(found) == 0 || best < opts.MinScore))
	if askLLM {
		chosen, err := s.llmSelect(ctx, a.Query, limit)
		if err != nil {
			// The keyword hits stand; the record says why.
			rec.Path, rec.Error = "llm-failed", err.Error()
		} else {
			found, rec.Path = chosen, "llm"
		}
	}
	rec.Found = found
	s.discover(found)
	text := s.describeFound(a.Query, found)
	s.mu.Lock()
	s.searches[key] = text
	s.mu.Unlock()
	return Result{Content: text}, rec
}

// keyword returns the keyword hits and the best score.
func (s *Session) keyword(q string, limit int) ([]string, float64) {
	res, err := s.snap.Search(q, limit)
	if err != nil || len(res.Hits) == 0 {
		return nil, 0
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.Name)
	}
	return out, res.Hits[0].Score
}

// describeFound is the tool_search result the model reads. An empty result
// still helps: it lists what exists.
func (s *Session) describeFound(q string, found []string) string {
	var b strings.Builder
	if len(found) == 0 {
		fmt.Fprintf(&b, "No tool matched %q.", q)
		plugins := map[string]bool{}
		for _, p := range s.snap.Plugins {
			plugins[p.Name()] = true
		}
		if len(plugins) > 0 {
			names := sortedNames(plugins)
			if len(names) > 30 {
				names = append(names[:30], "…")
			}
			fmt.Fprintf(&b, " Tool groups that exist: %s. Try other words for what you need.", strings.Join(names, ", "))
		} else {
			b.WriteString(" No specialised tools are installed.")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "Found %d tool(s); they are callable now:\n", len(found))
	for _, n := range found {
		t, _ := s.snap.Tool(n)
		fmt.Fprintf(&b, "- %s: %s\n", n, firstSentence(t.Spec.Description))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for _, sep := range []string{". ", "。", "\n"} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i+len(strings.TrimSpace(sep))]
			break
		}
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// llmSelect asks the selection model to choose tools from a compact
// candidate list; only names in the pool are kept.
func (s *Session) llmSelect(ctx context.Context, q string, limit int) ([]string, error) {
	opts := s.host.opts.Search
	client, model := opts.LLMClient, opts.LLMModel
	if client == nil {
		client = s.host.opts.Client
	}
	if model == "" {
		model = s.host.opts.Model
	}
	cands := s.candidates(q, opts.MaxCandidates)
	if len(cands) == 0 {
		return nil, nil
	}
	var list strings.Builder
	for _, t := range cands {
		fmt.Fprintf(&list, "%s: %s\n", t.Name(), firstSentence(t.Spec.Description))
	}
	req := openai.ChatCompletionRequest{Model: model, Temperature: 0, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You choose tools for a task. Answer with a JSON object only: " +
			`{"tools": ["name", ...]}` + fmt.Sprintf(", at most %d names from the list, best first; an empty list if none fits.", limit)},
		{Role: openai.ChatMessageRoleUser, Content: "Task: " + q + "\n\nTools:\n" + list.String()},
	}}
	out, err := s.host.complete(ctx, client, req)
	if err != nil {
		return nil, fmt.Errorf("selection model: %w", err)
	}
	if len(out.Choices) == 0 {
		return nil, fmt.Errorf("selection model returned no choice")
	}
	names := parseSelection(out.Choices[0].Message.Content)
	pool := map[string]string{}
	for _, t := range cands {
		pool[strings.ToLower(t.Name())] = t.Name()
	}
	var found []string
	seen := map[string]bool{}
	for _, n := range names {
		if real, ok := pool[strings.ToLower(strings.TrimSpace(n))]; ok && !seen[real] {
			seen[real] = true
			found = append(found, real)
		}
		if len(found) == limit {
			break
		}
	}
	return found, nil
}

// candidates is the list the selection model sees: the whole pool when it
// is small, else the keyword recall of the query (never thousands).
func (s *Session) candidates(q string, max int) []*catalog.Tool {
	if len(s.snap.Tools) <= max {
		return s.snap.Tools
	}
	var out []*catalog.Tool
	names, _ := s.keyword(q, max)
	for _, n := range names {
		t, _ := s.snap.Tool(n)
		out = append(out, t)
	}
	return out
}

var jsonObject = regexp.MustCompile(`(?s)\{.*\}`)

// parseSelection reads {"tools": [...]} tolerantly: inside code fences or
// prose, a bare array, or a "name" list.
func parseSelection(text string) []string {
	text = strings.TrimSpace(text)
	var obj struct {
		Tools []string `json:"tools"`
	}
	if m := jsonObject.FindString(text); m != "" && json.Unmarshal([]byte(m), &obj) == nil {
		return obj.Tools
	}
	if i, j := strings.Index(text, "["), strings.LastIndex(text, "]"); i >= 0 && j > i {
		var arr []string
		if json.Unmarshal([]byte(text[i:j+1]), &arr) == nil {
			return arr
		}
	}
	return strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" ,\n\t\"'`[]{}", r) })
}

func decodeAny(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// emptyFS is a plugin directory with nothing in it.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	if name == "." {
		return emptyDir{}, nil
	}
	return nil, fs.ErrNotExist
}

type emptyDir struct{}

func (emptyDir) Stat() (fs.FileInfo, error)         { return nil, fs.ErrInvalid }
func (emptyDir) Read([]byte) (int, error)           { return 0, fs.ErrInvalid }
func (emptyDir) Close() error                       { return nil }
func (emptyDir) ReadDir(int) ([]fs.DirEntry, error) { return nil, nil }
