package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// aceBench converts ACEBench (data_all/data_zh or data_all/data_en): every
// sample comes with its own function list, and the catalog is their union.
func aceBench(lang string) Converter {
	language := map[string]string{"zh": "Chinese (Simplified)", "en": "English"}[lang]
	return Converter{
		Name:     "acebench-" + lang,
		Title:    "ACEBench, " + language + " half: the union of every sample's functions as one catalog, each request labelled with the functions its answer calls",
		Repo:     "https://github.com/ACEBench/ACEBench",
		Paper:    "ACEBench: Who Wins the Match Point in Tool Usage? (arXiv:2501.12851)",
		Licence:  "MIT (LICENSE.md at the repository root)",
		Copy:     true,
		Language: language,
		Natural: "Requests were written by an LLM from generated API documents and then checked by people (the paper's account); they read as " +
			"plausible user requests with concrete values (\"" + map[string]string{"zh": "我需要计划下月的汽车保养。车辆识别码为WXZ123……", "en": "I need to schedule maintenance for my car next month ..."}[lang] +
			"\"). Multi-turn samples are several user turns answering the assistant's questions. The APIs are generated, not real services, " +
			"but cover 8 domains and 68 sub-domains with realistic names and nested JSON Schema parameters.",
		Rules: []string{
			"Read: `data_all/data_" + lang + "/data_{normal,special}_*.json` and the matching `possible_answer/` files; files in name order, lines in file order.",
			"tools.jsonl: the union of every read sample's `function` list (irrelevant-request samples included, as distractors); `parameters` as given, `dict` mapped to `object`.",
			"queries.jsonl: `query` = the user turns of `question` (lines after `user:`), joined by a newline; the assistant's questions and earlier calls (`system:` lines) are left out, since they can name the tools. `tools` = the function names that are keys of `ground_truth` (one object or a list of them); for `special_incomplete` the ground truth names the function whose arguments are missing, which is still the tool the request needs.",
			"`agent_multi_step` and `agent_multi_turn` are left out: their ground truth is the environment's end state and their `path` is empty, so no call is labelled. `special_error_param` is left out: its answer names parameters, not functions. `special_irrelevant` is left out: no offered function fits.",
		},
		Caveats: []string{
			"Every sample brings 1-6 functions of one topic; in the union, near-namesakes from other samples compete without being labelled correct (the `similar_api` split has pairs that differ only in scope on purpose).",
			"Multi-turn `user_switch` samples ask an earlier question before the labelled one; the query keeps both turns, so a search that finds the earlier intent's tool is not rewarded.",
			"The Chinese and English halves are separate generations, not translations of each other; their catalogs differ.",
		},
		Convert: func(src *Source, s *Set) error { return convertACEBench(src, s, lang) },
	}
}

type aceSample struct {
	ID       string `json:"id"`
	Question any    `json:"question"`
	Function []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	} `json:"function"`
}

type aceAnswer struct {
	ID          string          `json:"id"`
	GroundTruth json.RawMessage `json:"ground_truth"`
}

func convertACEBench(src *Source, s *Set, lang string) error {
	dir := "data_all/data_" + lang + "/"
	files, err := src.Glob(dir + "data_*.json")
	if err != nil {
		return err
	}
	for _, f := range files {
		split := strings.TrimPrefix(stem(f), "data_")
		skip := ""
		switch {
		case strings.HasPrefix(split, "agent_"):
			skip = "agent samples: no labelled calls"
		case split == "special_error_param":
			skip = "special_error_param: the answer names parameters"
		case split == "special_irrelevant":
			skip = "special_irrelevant: no tool fits"
		}
		if strings.HasPrefix(split, "agent_") {
			// Not read at all: their functions are an environment's, shared by every agent sample.
			s.Stats.skip(skip)
			continue
		}
		answers := map[string]json.RawMessage{}
		if skip == "" {
			if err := JSONLines(src, dir+"possible_answer/"+stem(f)+".json", func(_ int, a aceAnswer) error {
				answers[a.ID] = a.GroundTruth
				return nil
			}); err != nil {
				return err
			}
		}
		err := JSONLines(src, f, func(_ int, r aceSample) error {
			var offered []string
			for _, fn := range r.Function {
				name, err := s.AddTool(fn.Name, fn.Description, fn.Parameters)
				if err != nil {
					return fmt.Errorf("sample %s: %w", r.ID, err)
				}
				offered = append(offered, name)
			}
			if skip != "" {
				s.Stats.skip(skip)
				return nil
			}
			gt, ok := answers[r.ID]
			if !ok {
				return fmt.Errorf("sample %s has no possible_answer", r.ID)
			}
			labels, err := aceLabels(gt)
			if err != nil {
				return fmt.Errorf("sample %s: %w", r.ID, err)
			}
			text, _ := r.Question.(string)
			s.AddOfferedQuery(Query{Query: aceUserTurns(text), ID: r.ID, Split: split, Lang: lang}, labels, offered)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// aceLabels returns the function names of a ground truth: the keys of one
// object, or of each object of a list, in the order written (the calls'
// order).
func aceLabels(gt json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(gt, &list); err != nil {
		list = []json.RawMessage{gt}
	}
	var out []string
	for _, obj := range list {
		keys, err := objectKeys(obj)
		if err != nil {
			return nil, fmt.Errorf("ground_truth is neither an object nor a list of objects")
		}
		for _, k := range keys {
			out = appendNew(out, k)
		}
	}
	return out, nil
}

// objectKeys returns the top-level keys of a JSON object in written order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// aceUserTurns returns the user turns of an ACEBench question ("user: ..."
// lines and the lines that continue them), joined by a newline; a question
// with no "user:" line is taken whole.
func aceUserTurns(q string) string {
	if !strings.Contains(q, "user:") {
		return q
	}
	var turns []string
	inUser := false
	for _, line := range strings.Split(q, "\n") {
		switch {
		case strings.HasPrefix(line, "user:"):
			inUser = true
			turns = append(turns, strings.TrimSpace(strings.TrimPrefix(line, "user:")))
		case strings.HasPrefix(line, "system:"), strings.HasPrefix(line, "assistant:"):
			inUser = false
		case inUser && strings.TrimSpace(line) != "":
			turns[len(turns)-1] += "\n" + strings.TrimSpace(line)
		}
	}
	return strings.Join(turns, "\n")
}
