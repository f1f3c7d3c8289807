package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/internal/tokens"
	"github.com/toolshed/toolshed/search"
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
	// MaxCandidates bounds the number of tools in the list sent to the LLM
	// (default search.DefaultCandidateTools, 1,000).
	MaxCandidates int
	// CandidateTokens bounds that list's size in o200k_base tokens
	// (default search.DefaultCandidateTokens, 6,000). The list is drawn from the whole pool: the query's
	// keyword hits first, then the other tools, one from each plugin in turn
	// (search.Index.Candidates), until either bound is reached.
	CandidateTokens int
	// Cut drops hits scoring under this share of the best hit's score when
	// the model gives no limit (default search.DefaultCut; negative: no
	// cut). A search with an explicit limit returns up to that many hits.
	Cut float64
	// MinScore: in HYBRID mode, a best keyword hit scoring below it counts
	// as low confidence and the LLM is asked too (0: only when keywords
	// find nothing).
	MinScore float64
	// Embedder, when set, adds the semantic stage to the LLM's candidate
	// list: the catalog's tools are embedded in the background (again
	// after a reload) and each query when a list is built; the tools
	// nearest the query are taken in turn with the keyword hits
	// (search.Index.Candidates), so the model also sees tools that share
	// no word with the query. A failing embedder leaves the keyword list.
	Embedder Embedder
	// EmbedTimeout bounds one query's embedding (default
	// DefaultEmbedTimeout).
	EmbedTimeout time.Duration
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
		o.MaxCandidates = search.DefaultCandidateTools
	}
	if o.CandidateTokens <= 0 {
		o.CandidateTokens = search.DefaultCandidateTokens
	}
	if o.Cut == 0 {
		o.Cut = search.DefaultCut
	}
	return o
}

// SearchRecord says how one tool_search call was answered.
type SearchRecord struct {
	Query string `json:"query"`
	Mode  Mode   `json:"mode"`
	// Path is how it was answered: keyword, llm, llm-failed (the model
	// failed; keyword hits stand), no-llm (a model was wanted but none
	// could be asked; keyword hits stand), empty (a model was wanted but
	// the pool is empty), cached, budget, invalid.
	Path  string   `json:"path"`
	Found []string `json:"found"`
	Error string   `json:"error,omitempty"`
	// Candidates and CandidateTokens describe the list a model was sent
	// (path llm or llm-failed): how many tools, how many tokens.
	Candidates      int `json:"candidates,omitempty"`
	CandidateTokens int `json:"candidate_tokens,omitempty"`
	// Semantic says what the semantic stage gave that list (with an
	// Embedder): "used", "not ready" (the catalog is being embedded) or
	// "failed: …".
	Semantic string `json:"semantic,omitempty"`
}

// maxSearchLimit is the most tools one search may return.
const maxSearchLimit = 20

var toolSearchParams = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool should do, in a few words (any language)"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"How many tools to return, weaker matches included (default: up to 5 close matches)"}},` +
	`"required":["query"]}`)

func (h *Host) toolSearchDescription() string {
	return "Find specialised tools that are not loaded yet (data, SQL, charts, calculation and more). " +
		"Describe what you need; the tools found become callable from your next step on. " +
		"Only close matches are returned; to see more, search again with other words or give a limit (up to 20). " +
		"Use it only when your current tools cannot do the job."
}

// parseSearchArgs decodes tool_search's arguments; a non-empty message
// says what is wrong with them, for the model to read.
func parseSearchArgs(args string) (query string, limit int, explicit bool, msg string) {
	var a map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		if len(args) > search.MaxQueryBytes+1024 {
			return "", 0, false, fmt.Sprintf("tool_search arguments are %d bytes; the query may be at most %d bytes", len(args), search.MaxQueryBytes)
		}
		return "", 0, false, `tool_search arguments must be a JSON object: {"query": "what the tool should do", "limit": 5}`
	}
	raw, ok := a["query"]
	if !ok || json.Unmarshal(raw, &query) != nil {
		return "", 0, false, `tool_search needs "query", a string saying what the tool should do`
	}
	if len(query) > search.MaxQueryBytes {
		return "", 0, false, fmt.Sprintf("query is %d bytes; the limit is %d bytes: describe the tool you need in a few words", len(query), search.MaxQueryBytes)
	}
	if strings.TrimSpace(query) == "" {
		return "", 0, false, `query is empty: say what the tool should do`
	}
	if raw, ok := a["limit"]; ok && string(raw) != "null" {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != float64(int(f)) || f < 1 || f > maxSearchLimit {
			return "", 0, false, fmt.Sprintf("limit must be an integer from 1 to %d", maxSearchLimit)
		}
		return query, int(f), true, ""
	}
	return query, 0, false, ""
}

func (s *Session) toolSearch(ctx context.Context, raw string) (Result, *SearchRecord) {
	p, res, rec := s.BeginSearch(raw, true)
	if p == nil {
		return res, rec
	}
	text, err := s.host.selectWithModel(ctx, p.System, p.Prompt)
	return p.Complete(text, err)
}

// PendingSearch is a tool_search call waiting for a language model's
// choice among candidate tools: its keyword part is done and nothing is
// applied to the session yet. Ask a model with System and Prompt (any
// model: the host's, or an MCP client's through sampling) and pass its
// answer to Complete, once. A PendingSearch belongs to one goroutine; its
// Session stays safe for concurrent use meanwhile.
type PendingSearch struct {
	System, Prompt string

	s       *Session
	key     string
	query   string
	limit   int
	keyword []string // the keyword hits, which stand if the model fails
	cands   []*catalog.Tool
	rec     *SearchRecord
}

// BeginSearch starts a tool_search call with the JSON arguments the model
// gave. When the configured mode wants a model's choice and canAskLLM is
// true, it returns a PendingSearch; otherwise the finished Result (and the
// found tools are discovered). With canAskLLM false a search that would
// have asked a model keeps its keyword hits (record path "no-llm").
// Beginning the same search twice before completing it is harmless: only
// completions count against the budget and change the session.
func (s *Session) BeginSearch(args string, canAskLLM bool) (*PendingSearch, Result, *SearchRecord) {
	opts := s.host.opts.Search
	rec := &SearchRecord{Mode: opts.Mode}
	query, limit, explicit, msg := parseSearchArgs(args)
	if msg != "" {
		rec.Path = "invalid"
		return nil, Result{Content: msg, IsError: true}, rec
	}
	rec.Query = query
	cut := opts.Cut
	if !explicit {
		limit = min(opts.Limit, maxSearchLimit)
	} else {
		cut = 0 // the model asked for this many
	}
	p := &PendingSearch{s: s, rec: rec, query: query, limit: limit,
		key: fmt.Sprintf("%d\x00%t\x00%s", limit, explicit, strings.ToLower(strings.Join(strings.Fields(query), " ")))}
	if res, done := s.cachedOrOverBudget(p); done {
		return nil, res, rec
	}
	found, best := s.keyword(query, limit, cut)
	p.keyword = found
	rec.Path = "keyword"
	askLLM := opts.Mode == ModeLLM ||
		(opts.Mode == ModeHybrid && (len(found) == 0 || best < opts.MinScore))
	if askLLM && !canAskLLM {
		rec.Path = "no-llm"
		askLLM = false
	}
	if askLLM {
		var list string
		p.cands, list, rec.CandidateTokens, rec.Semantic = s.candidates(query, opts.MaxCandidates, opts.CandidateTokens)
		rec.Candidates = len(p.cands)
		if len(p.cands) > 0 {
			p.System = "You choose tools for a task. Each line of the list is a tool, or several tools that share a description, " +
				"then what it does. Answer with a JSON object only: " +
				`{"tools": ["name", ...]}` + fmt.Sprintf(", at most %d names from the list, best first; an empty list if none fits.", limit)
			p.Prompt = "Task: " + query + "\n\nTools:\n" + list
			return p, Result{}, rec
		}
		rec.Path = "empty" // nothing to choose from: no model asked
		found = nil
	}
	res, rec := p.apply(found)
	return nil, res, rec
}

// Complete finishes the search with the model's answer: the names it
// chose among the candidates (unknown names are dropped), or, when err is
// set, the keyword hits (record path "llm-failed").
func (p *PendingSearch) Complete(answer string, err error) (Result, *SearchRecord) {
	if err != nil {
		p.rec.Path, p.rec.Error = "llm-failed", err.Error()
		return p.apply(p.keyword)
	}
	p.rec.Path = "llm"
	return p.apply(choose(answer, p.cands, p.limit))
}

// cachedOrOverBudget answers a repeated query from the session's cache
// and refuses searches past the budget.
func (s *Session) cachedOrOverBudget(p *PendingSearch) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cachedOrOverBudgetLocked(p)
}

func (s *Session) cachedOrOverBudgetLocked(p *PendingSearch) (Result, bool) {
	budget := s.budget
	if text, ok := s.searches[p.key]; ok {
		p.rec.Path = "cached"
		return Result{Content: text}, true
	}
	if budget >= 0 && s.nSearches >= budget {
		p.rec.Path = "budget"
		return Result{Content: fmt.Sprintf("search budget exhausted: this request already searched %d times. "+
			"Work with the tools you have, or answer the user.", budget), IsError: true}, true
	}
	return Result{}, false
}

// apply counts the search, caches its answer and discovers what it found.
// The check, the count and the cache entry are one step, so two identical
// searches finishing at once count once.
func (p *PendingSearch) apply(found []string) (Result, *SearchRecord) {
	s := p.s
	text := s.describeFound(p.query, found)
	s.mu.Lock()
	if res, done := s.cachedOrOverBudgetLocked(p); done {
		s.mu.Unlock()
		return res, p.rec // a concurrent twin finished first, or the budget ran out
	}
	s.nSearches++
	s.searches[p.key] = text
	s.mu.Unlock()
	p.rec.Found = found
	s.discover(found)
	return Result{Content: text}, p.rec
}

// keyword returns the keyword hits that pass the relevance cut at ratio
// (search.Cut) and the best score.
func (s *Session) keyword(q string, limit int, ratio float64) ([]string, float64) {
	res, err := s.snap.Search(q, limit)
	if err != nil || len(res.Hits) == 0 {
		return nil, 0
	}
	var out []string
	for _, h := range search.Cut(res.Hits, ratio) {
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
		fmt.Fprintf(&b, "- %s: %s\n", n, search.FirstSentence(t.Spec.Description))
	}
	return strings.TrimRight(b.String(), "\n")
}

// selectWithModel asks the host's selection model (Options.Search.LLMClient
// and LLMModel, else the main ones).
func (h *Host) selectWithModel(ctx context.Context, system, prompt string) (string, error) {
	model := h.opts.Search.LLMModel
	if model == "" {
		model = h.opts.Model
	}
	req := openai.ChatCompletionRequest{Model: model, Temperature: 0, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: prompt},
	}}
	out, err := h.complete(ctx, h.chooser, req)
	if err != nil {
		return "", fmt.Errorf("selection model: %w", err)
	}
	if len(out.Choices) == 0 {
		return "", fmt.Errorf("selection model returned no choice")
	}
	return out.Choices[0].Message.Content, nil
}

// choose keeps the names of the model's answer that are candidates, in
// its order, at most limit.
func choose(answer string, cands []*catalog.Tool, limit int) []string {
	names := parseSelection(answer)
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
	return found
}

// candidates is the list the selection model sees, drawn from the whole
// pool (search.Index.Candidates: keyword hits first, in turn with the
// semantic stage's nearest tools when there is one, then every plugin in
// turn) until max tools or budget tokens: the tools, the list's text, its
// size in tokens and what the semantic stage gave (SearchRecord.Semantic). Tools with the same first sentence share a line; the
// first search.CandidateFull lines are full, the rest short unless the
// budget has room for more full lines (search.Index.FitCandidates); a
// tool that does not fit ends the list.
//
// A pool that fits whole is sent whole, in catalog order, whatever the
// query: the same bytes for every search of that catalog.
func (s *Session) candidates(q string, max, budget int) ([]*catalog.Tool, string, int, string) {
	if len(s.snap.Tools) <= max {
		var list strings.Builder
		used := 0
		for _, t := range s.snap.Tools {
			line := candidateLine(t)
			if used += countTokens(line); used > budget {
				break // it does not fit whole: no need to count the rest
			}
			list.WriteString(line)
		}
		if used <= budget {
			return s.snap.Tools, list.String(), used, ""
		}
	}
	var near []string
	var sem string
	if m := s.host.semantic; m != nil {
		near, sem = m.rank(context.Background(), s.snap, q)
	}
	describe := func(name string) (string, bool) {
		t, ok := s.snap.Tool(name)
		if !ok {
			return "", false
		}
		return t.Spec.Description, true
	}
	count := func(line string) (int, error) { return countTokens(line), nil }
	l, _ := s.snap.Index.FitCandidates(q, near, max, budget, describe, count) // count never fails
	out := make([]*catalog.Tool, 0, len(l.Names))
	for _, name := range l.Names {
		t, _ := s.snap.Tool(name)
		out = append(out, t)
	}
	return out, l.Text, l.Tokens, sem
}

// countTokens counts o200k_base tokens, or overestimates them when the
// vocabulary cannot load.
func countTokens(s string) int {
	n, err := tokens.Count(s)
	if err != nil {
		return len(s)/3 + 1
	}
	return n
}

// candidateLine is one tool as the selection model reads it.
func candidateLine(t *catalog.Tool) string { return search.CandidateLine(t.Name(), t.Spec.Description) }

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
