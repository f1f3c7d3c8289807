package main

import (
	"fmt"
	"path"
	"strings"
)

// toolEyes converts ToolEyes: requests labelled with the toolkit (a folder
// of Tool_Library holding several functions of one real API) that serves
// them. The catalog has one entry per toolkit, as a plugin is to its tools.
func toolEyes() Converter {
	return Converter{
		Name:     "tooleyes",
		Title:    "ToolEyes (COLING 2025): requests in seven scenarios, each labelled with the toolkit of real APIs that serves it; one catalog entry per toolkit",
		Repo:     "https://github.com/Junjie-Ye/ToolEyes",
		Paper:    "ToolEyes: Fine-Grained Evaluation for Tool Learning Capabilities of Large Language Models in Real-world Scenarios (COLING 2025, arXiv:2401.00741)",
		Licence:  "Apache-2.0 (LICENSE at the repository root)",
		Copy:     true,
		Language: "English",
		Natural: "Short first-person requests as a user would type them (\"I'm testing a system that needs multiple UUIDs, can you generate six for me?\", " +
			"\"I would like to know more about the process of photosynthesis.\"), across text generation, data understanding, real-time search, " +
			"application manipulation, personal life, information retrieval and financial transactions. The toolkits wrap real public APIs " +
			"(Yelp, CoinMarketCap, spoonacular, arXiv, openweathermap, ...).",
		Rules: []string{
			"Read: `Tool_Library/<category>/<toolkit>/config_gpt4.json` (each a list of functions: `name`, `description`, `parameters`), folders in name order, and `Test_Data/scenario_data_raw.json` (`query`, `path` of the toolkit, `scenario`).",
			"tools.jsonl: one line per toolkit; `name` = the toolkit's folder name (`Yelp`, `API_NBA`); `description` = its functions, each as `name: description`, joined by a space; `parameters` = an object with no properties (the functions' own parameters belong to the second stage, choosing a function inside the toolkit).",
			"queries.jsonl: `query` = `query`; `tools` = the toolkit named by the last part of `path`; `id` = the scenario and the request's position in the file (`PL/17`); `split` = the scenario (TG text generation, DU data understanding, RS real-time search, AM application manipulation, PL personal life, IR information retrieval, FT financial transactions).",
		},
		Caveats: []string{
			"The labels name toolkits, not functions: ToolEyes grades the calls made with a model judge, and publishes no gold call per request. The set measures the first stage of a two-stage search (plugin, then tool).",
			"The catalog is small (one entry per toolkit); several toolkits overlap (Flight_Data_v1 / Flight_Data_v2, Hotels / Hotels_Data, nine spoonacular toolkits), so a request can be served by a toolkit that is not its label.",
		},
		Convert: convertToolEyes,
	}
}

func convertToolEyes(src *Source, s *Set) error {
	kits, err := src.Glob("Tool_Library/*/*/config_gpt4.json")
	if err != nil {
		return err
	}
	for _, k := range kits {
		var funcs []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if err := JSONFile(src, k, &funcs); err != nil {
			return err
		}
		var parts []string
		for _, f := range funcs {
			parts = append(parts, strings.TrimSpace(f.Name)+": "+oneSpace(f.Description))
		}
		if _, err := s.AddTool(path.Base(path.Dir(k)), strings.Join(parts, " "), nil); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	var queries []struct {
		Query    string `json:"query"`
		Path     string `json:"path"`
		Scenario string `json:"scenario"`
	}
	if err := JSONFile(src, "Test_Data/scenario_data_raw.json", &queries); err != nil {
		return err
	}
	n := map[string]int{}
	for _, q := range queries {
		n[q.Scenario]++
		kit := path.Base(strings.TrimRight(q.Path, "/"))
		s.AddQuery(Query{Query: q.Query, ID: fmt.Sprintf("%s/%d", q.Scenario, n[q.Scenario]), Split: q.Scenario, Lang: "en"}, []string{kit})
	}
	return nil
}
