package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// apiBank converts API-Bank's level-1 and level-2 dialogues (the folder
// api-bank of AlibabaResearch/DAMO-ConvAI) over its 101 API specifications.
func apiBank() Converter {
	return Converter{
		Name:     "api-bank",
		Title:    "API-Bank (EMNLP 2023): its annotated level-1 and level-2 tool-use dialogues over the 101 APIs it specifies",
		Repo:     "https://github.com/AlibabaResearch/DAMO-ConvAI (folder `api-bank/`)",
		Paper:    "API-Bank: A Comprehensive Benchmark for Tool-Augmented LLMs (EMNLP 2023, arXiv:2304.08244)",
		Licence:  "Apache-2.0 (api-bank/LICENSE; the repository root is MIT)",
		Copy:     true,
		Language: "English",
		Natural: "Among the most natural of these sets: the dialogues were written by annotators as a user talking to an assistant " +
			"(\"Can you add a schedule for me at 2pm on September 12th called 'Meeting with John' at the office?\"), with the " +
			"follow-up turns a real user gives (user name and password when asked). The APIs are a personal-assistant suite " +
			"(agenda, alarms, bank, health registration, smart home, search) specified by the authors, 49 of them implemented and labelled here; " +
			"the catalog is small (101 tools), so this set tests precision among close siblings (AddAlarm / ModifyAlarm / DeleteAlarm) more than scale.",
		Rules: []string{
			"Read: `api-bank/data/all_apis.csv` (one row per API: class name, `api_info` with its Python `description` and `input_parameters`), " +
				"`api-bank/apis/<name in snake case>.py` only for an API whose row has no `api_info` (ImageCaption), and every `api-bank/lv1-lv2-samples/*/*.jsonl` dialogue, folders and files in name order.",
			"tools.jsonl: one line per CSV row; `name` = the class name (what the dialogues call), `description` = `description`, `parameters` from `input_parameters` (Python types mapped: str to string, int to integer, float to number, bool to boolean, list to array, dict to object, datetime and others to string with `format` naming them).",
			"queries.jsonl: one line per dialogue; `query` = the user turns up to the last API call, joined by a newline; `tools` = the APIs called, in call order, without `ToolSearcher` (the level-2 dialogues' own search tool, which is what is being evaluated here, not a tool a user needs). `split` = the folder: `level-1-given-desc` (the API's description given) or `level-2-toolsearcher` (the assistant first searches for the API); `id` = the file name, which names the APIs the dialogue calls.",
		},
		Caveats: []string{
			"`GetUserToken` is called in about half the dialogues because the APIs need a token, and users rarely ask for it in words (\"my username is ...\"); it is a label like any other.",
			"Several level-1 dialogues are variants of one scenario (files `X-level-1-1` to `-5`); identical user text is merged.",
			"The level-3 samples (lv3-samples) are not labelled with calls and are not used.",
		},
		Convert: convertAPIBank,
	}
}

var (
	pyDescription = regexp.MustCompile(`(?m)^\s*description\s*=\s*`)
	pyInputParams = regexp.MustCompile(`(?m)^\s*input_parameters\s*=\s*\{`)
	pyParam       = regexp.MustCompile(`['"](\w+)['"]\s*:\s*\{\s*['"]type['"]\s*:\s*['"]([^'"]*)['"]\s*,\s*['"]description['"]\s*:\s*`)
	pyDictEnd     = regexp.MustCompile(`(?m)^\s*\}`)
	pyCamelWord   = regexp.MustCompile(`[A-Z]+[a-z0-9]*`)
)

func convertAPIBank(src *Source, s *Set) error {
	b, err := src.ReadFile("api-bank/data/all_apis.csv")
	if err != nil {
		return err
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return fmt.Errorf("api-bank/data/all_apis.csv: %w", err)
	}
	if len(rows) < 2 {
		return fmt.Errorf("api-bank/data/all_apis.csv: no rows")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	nameCol, okName := col["类名"]
	infoCol, okInfo := col["api_info"]
	if !okName || !okInfo {
		return fmt.Errorf("api-bank/data/all_apis.csv: want columns 类名 and api_info, have %q", rows[0])
	}
	for i, row := range rows[1:] {
		if len(row) <= nameCol || len(row) <= infoCol {
			return fmt.Errorf("api-bank/data/all_apis.csv: row %d has %d columns", i+2, len(row))
		}
		name, info := strings.TrimSpace(row[nameCol]), row[infoCol]
		if !pyDescription.MatchString(info) {
			// The implementation's file is the class name in snake case.
			py, err := src.ReadFile("api-bank/apis/" + snakeCase(name) + ".py")
			if err != nil {
				return fmt.Errorf("api-bank: API %s has no api_info in the CSV: %w", name, err)
			}
			info = string(py)
		}
		desc, params, err := parsePyAPI(info)
		if err != nil {
			return fmt.Errorf("api-bank: API %s: %w", name, err)
		}
		if _, err := s.AddTool(name, desc, params); err != nil {
			return err
		}
	}
	dialogues, err := src.Glob("api-bank/lv1-lv2-samples/*/*.jsonl")
	if err != nil {
		return err
	}
	type turn struct {
		Role    string `json:"role"`
		Text    string `json:"text"`
		APIName string `json:"api_name"`
	}
	for _, f := range dialogues {
		split := path.Base(path.Dir(f)) // level-1-given-desc or level-2-toolsearcher
		var user, pendingUser, labels []string
		err := JSONLines(src, f, func(_ int, t turn) error {
			switch t.Role {
			case "User":
				pendingUser = append(pendingUser, strings.TrimSpace(t.Text))
			case "API":
				user = append(user, pendingUser...)
				pendingUser = nil
				if t.APIName != "ToolSearcher" && t.APIName != "" {
					labels = appendNew(labels, t.APIName)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(labels) == 0 {
			s.Stats.skip("dialogue with no API call")
			continue
		}
		s.AddQuery(Query{Query: strings.Join(user, "\n"), ID: stem(f), Split: split, Lang: "en"}, labels)
	}
	return nil
}

// snakeCase turns a class name into its file name: ImageCaption ->
// image_caption, QueryHistoryToday -> query_history_today.
func snakeCase(name string) string {
	return strings.ToLower(strings.Join(pyCamelWord.FindAllString(name, -1), "_"))
}

// parsePyAPI reads the `description = "..."` and `input_parameters = {...}`
// assignments of an API-Bank API (Python source) into a description and a
// JSON Schema object.
func parsePyAPI(text string) (string, map[string]any, error) {
	loc := pyDescription.FindStringIndex(text)
	if loc == nil {
		return "", nil, fmt.Errorf("no description")
	}
	desc, _, err := pyString(text[loc[1]:])
	if err != nil {
		return "", nil, fmt.Errorf("description: %w", err)
	}
	props := map[string]any{}
	if loc := pyInputParams.FindStringIndex(text); loc != nil {
		body := text[loc[1]:]
		if end := pyDictEnd.FindStringIndex(body); end != nil {
			body = body[:end[0]]
		}
		for _, m := range pyParam.FindAllStringSubmatchIndex(body, -1) {
			name, typ := body[m[2]:m[3]], body[m[4]:m[5]]
			d, _, err := pyString(body[m[1]:])
			if err != nil {
				return "", nil, fmt.Errorf("parameter %s: %w", name, err)
			}
			props[name] = map[string]any{"type": typ, "description": d}
		}
	}
	return desc, map[string]any{"type": "object", "properties": props}, nil
}

// pyString decodes the Python string literal at the start of s (single or
// double quotes, backslash escapes) and returns it and the rest of s.
func pyString(s string) (string, string, error) {
	s = strings.TrimLeft(s, " \t")
	if s == "" || (s[0] != '"' && s[0] != '\'') {
		return "", s, fmt.Errorf("want a quoted string")
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case c == q:
			return b.String(), s[i+1:], nil
		case c == '\n':
			return "", s, fmt.Errorf("unterminated string")
		default:
			b.WriteByte(c)
		}
	}
	return "", s, fmt.Errorf("unterminated string")
}
