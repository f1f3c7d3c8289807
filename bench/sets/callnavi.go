package main

import (
	"fmt"
	"strings"
)

// callNavi converts CallNavi: ten domain API catalogs (Dataset/APISchema)
// and the questions asked of each (Dataset/Questions), as one catalog.
func callNavi() Converter {
	return Converter{
		Name:     "callnavi",
		Title:    "CallNavi: questions to ten enterprise-style API catalogs (aviation, bank, government, hospital, hotel, HR, insurance, logistics, shopping, telecommunications), put into one catalog",
		Repo:     "https://github.com/Etamin/CallNavi",
		Paper:    "CallNavi: A Challenge and Empirical Study on LLM Function Calling and Routing (arXiv:2501.05255)",
		Licence:  "MIT (LICENSE at the repository root)",
		Copy:     true,
		Language: "English",
		Natural: "Short, direct customer-service requests (\"Can you retrieve the transaction history for account ID 123456 between 2024-01-01 and 2024-12-31?\"), " +
			"generated with an LLM and reviewed by the authors; the harder ones chain several calls in one request. The APIs are designed to look like " +
			"real enterprise back-ends (camelCase operation names, JSON Schema parameters) but are not live services.",
		Rules: []string{
			"Read: `Dataset/APISchema/*.json` (each a list of functions: `name`, `description`, `parameters` as JSON Schema) and `Dataset/Questions/*.json` (each a list of questions with `ground_truth.API`), in file-name order; the file name is the domain.",
			"tools.jsonl: every function of every domain. A name that folds the same in two or more domains (getAccountDetails in bank and in telecommunications) is renamed `<domain>_<name>` in each, and so are the labels of that domain's questions; every other name is kept as written.",
			"queries.jsonl: `query` = the user messages of `question`, joined by a newline; `tools` = `ground_truth.API` in order, duplicates removed; `split` = `<domain>/<difficulty>`.",
		},
		Caveats: []string{
			"A few labels name functions missing from their domain's schema (for example `getpassengerName` in aviation); those questions are dropped and counted above.",
			"Within a domain, many functions differ in one word (getShippingOptions / getShippingRates); the catalog is small, so this set tests fine distinctions more than scale.",
		},
		Convert: convertCallNavi,
	}
}

type callNaviFunc struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

type callNaviQuestion struct {
	ID       string `json:"id"`
	Question []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"question"`
	GroundTruth struct {
		API []string `json:"API"`
	} `json:"ground_truth"`
	Difficulty string `json:"difficulty"`
}

func convertCallNavi(src *Source, s *Set) error {
	schemas, err := src.Glob("Dataset/APISchema/*.json")
	if err != nil {
		return err
	}
	byDomain := map[string][]callNaviFunc{}
	shared := make(Namesakes)
	var domains []string
	for _, f := range schemas {
		d := stem(f)
		var funcs []callNaviFunc
		if err := JSONFile(src, f, &funcs); err != nil {
			return err
		}
		domains = append(domains, d)
		byDomain[d] = funcs
		for _, fn := range funcs {
			shared.Add(d, fn.Name)
		}
	}
	for _, d := range domains {
		for _, fn := range byDomain[d] {
			name := shared.Qualify(d, fn.Name)
			if name != fn.Name {
				s.Stats.Renamed++
			}
			if _, err := s.AddTool(name, fn.Description, fn.Parameters); err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
		}
	}
	for _, d := range domains {
		var qs []callNaviQuestion
		if err := JSONFile(src, "Dataset/Questions/"+d+".json", &qs); err != nil {
			return err
		}
		for _, q := range qs {
			var user []string
			for _, m := range q.Question {
				if m.Role == "user" {
					user = append(user, strings.TrimSpace(m.Content))
				}
			}
			labels := make([]string, len(q.GroundTruth.API))
			for i, a := range q.GroundTruth.API {
				labels[i] = shared.Qualify(d, a)
			}
			s.AddQuery(Query{Query: strings.Join(user, "\n"), ID: q.ID, Split: d + "/" + q.Difficulty, Lang: "en"}, labels)
		}
	}
	return nil
}
