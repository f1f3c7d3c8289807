package main

import (
	"fmt"
	"strings"
)

// taskBench converts one domain of TaskBench (microsoft/JARVIS,
// taskbench/data_<domain>): tool_desc.json is the catalog, data.json the
// labelled requests.
func taskBench(domain string) Converter {
	return Converter{
		Name:     "taskbench-" + domain,
		Title:    "TaskBench, " + domain + " domain: back-instructed requests labelled with the tool nodes of their invocation graph",
		Repo:     "https://github.com/microsoft/JARVIS (folder `taskbench/`)",
		Paper:    "TaskBench: Benchmarking Large Language Models for Task Automation (NeurIPS 2024 Datasets and Benchmarks, arXiv:2311.18760)",
		Licence:  "MIT (LICENSE at the repository root)",
		Copy:     true,
		Language: "English",
		Natural: "Requests written by an LLM from a sampled graph of tools (\"back-instruct\"), then checked and fixed by people (the README's account); " +
			"first-person and fluent (\"I've had a long day and there's this film 'Example Movie' that's been on my list for a while. Could you play it for me, please?\"), " +
			"often chaining several tools in one request. The catalog of a domain is small (23 to 40 tools).",
		Rules: []string{
			"Read: `taskbench/data_" + domain + "/tool_desc.json` (`nodes`: `id`, `desc`, and either `parameters` or `input-type` / `output-type`) and `taskbench/data_" + domain + "/data.json` (one sample a line), in line order.",
			"tools.jsonl: one line per node; `name` = `id`; `description` = `desc`, followed by the input and output types where the node gives them instead of parameters; `parameters` from `parameters` (`name`, `type`, `desc`).",
			"queries.jsonl: `query` = `instruction`; `tools` = the `task` of each of `task_nodes`, in order, duplicates removed; `id` = `id`; `split` = `type` (single, chain or dag).",
		},
		Caveats: []string{
			"The catalogs are small; in the Hugging Face and multimedia domains the tools are task types (\"Token Classification\", \"Image Downloader\") whose names contain spaces, which a Toolshed manifest would refuse.",
		},
		Convert: func(src *Source, s *Set) error { return convertTaskBench(src, s, domain) },
	}
}

type taskBenchNode struct {
	ID         string `json:"id"`
	Desc       string `json:"desc"`
	Parameters []struct {
		Name string `json:"name"`
		Type string `json:"type"`
		Desc string `json:"desc"`
	} `json:"parameters"`
	InputType  []string `json:"input-type"`
	OutputType []string `json:"output-type"`
}

type taskBenchSample struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Instruction string `json:"instruction"`
	TaskNodes   []struct {
		Task string `json:"task"`
	} `json:"task_nodes"`
}

func convertTaskBench(src *Source, s *Set, domain string) error {
	dir := "taskbench/data_" + domain + "/"
	var desc struct {
		Nodes []taskBenchNode `json:"nodes"`
	}
	if err := JSONFile(src, dir+"tool_desc.json", &desc); err != nil {
		return err
	}
	for _, n := range desc.Nodes {
		props := map[string]any{}
		for _, p := range n.Parameters {
			props[p.Name] = map[string]any{"type": p.Type, "description": p.Desc}
		}
		text := n.Desc
		if len(n.InputType) > 0 || len(n.OutputType) > 0 {
			text = strings.TrimSuffix(strings.TrimSpace(text), ".") + fmt.Sprintf(". Input: %s. Output: %s.",
				strings.Join(n.InputType, ", "), strings.Join(n.OutputType, ", "))
		}
		if _, err := s.AddTool(n.ID, text, map[string]any{"type": "object", "properties": props}); err != nil {
			return fmt.Errorf("%stool_desc.json: %w", dir, err)
		}
	}
	return JSONLines(src, dir+"data.json", func(_ int, d taskBenchSample) error {
		var labels []string
		for _, n := range d.TaskNodes {
			labels = appendNew(labels, n.Task)
		}
		s.AddQuery(Query{Query: d.Instruction, ID: d.ID, Split: d.Type, Lang: "en"}, labels)
		return nil
	})
}
