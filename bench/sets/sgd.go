package main

import (
	"fmt"
	"strings"
)

// sgd converts the Schema-Guided Dialogue dataset (DSTC8): the user turns
// of its test dialogues that state an intent in words, over the intents of
// every service schema, one tool per domain and intent.
func sgd() Converter {
	return Converter{
		Name:     "sgd",
		Title:    "Schema-Guided Dialogue (SGD, DSTC8): user turns of the test dialogues that state an intent, labelled with that intent, over the intents of all its service schemas",
		Repo:     "https://github.com/google-research-datasets/dstc8-schema-guided-dialogue",
		Paper:    "Towards Scalable Multi-domain Conversational Agents: The Schema-Guided Dialogue Dataset (AAAI 2020, arXiv:1909.05855)",
		Licence:  "CC BY-SA 4.0 (LICENSE.txt at the repository root); this converted set is shared under the same licence",
		Copy:     true,
		Language: "English",
		Natural: "Among the most natural requests available: the dialogues were outlined by a simulator and then written out by paid crowd workers, " +
			"so each turn reads as a person typed it (\"Hi, could you get me a restaurant booking on the 8th please?\", \"What alarms do I have set?\"). " +
			"The services (20 domains: restaurants, flights, banks, media, alarms, ...) are modelled on real virtual-assistant APIs, with " +
			"intents as operations and slots as parameters; the test split holds services never seen in training.",
		Rules: []string{
			"Read: `dev/schema.json`, `test/schema.json`, `train/schema.json` (in that order) and every `test/dialogues_*.json` present, in name order.",
			"tools.jsonl: one tool per domain and intent, `name` = `<domain>_<intent>` where the domain is the service name without its `_N` suffix (`Restaurants_ReserveRestaurant`): sibling services of one domain offering the same intent (Restaurants_1 and Restaurants_2) are one tool, since a request cannot tell them apart; the first schema's definition is kept. `description` = the intent's description, then the service's; `parameters` = the intent's required and optional slots, described by the service's slot descriptions, categorical slots with their `enum`.",
			"queries.jsonl: one line per user turn with an `INFORM_INTENT` act (the user states the intent in words; a turn that only accepts the system's offer is left out, since it reads \"Yes, please\"); `query` = the utterance; `tools` = the intents informed; `id` = `<dialogue_id>/<turn>`; `split` = `test-seen` when every labelled service appears in the training schema, else `test-unseen`.",
		},
		Caveats: []string{
			"The catalog is small (one tool per domain and intent); the set tests natural phrasing, not scale.",
			"Many turns rely on the dialogue so far (\"Can you book it for me?\"); the query is the turn alone.",
			"Dialogue files of 4 MiB and more may be absent from a snapshot; the source files listed above are the ones converted.",
		},
		Convert: convertSGD,
	}
}

type sgdService struct {
	Name        string `json:"service_name"`
	Description string `json:"description"`
	Slots       []struct {
		Name           string   `json:"name"`
		Description    string   `json:"description"`
		IsCategorical  bool     `json:"is_categorical"`
		PossibleValues []string `json:"possible_values"`
	} `json:"slots"`
	Intents []struct {
		Name          string            `json:"name"`
		Description   string            `json:"description"`
		RequiredSlots []string          `json:"required_slots"`
		OptionalSlots map[string]string `json:"optional_slots"`
	} `json:"intents"`
}

type sgdDialogue struct {
	ID    string `json:"dialogue_id"`
	Turns []struct {
		Speaker   string `json:"speaker"`
		Utterance string `json:"utterance"`
		Frames    []struct {
			Service string `json:"service"`
			Actions []struct {
				Act    string   `json:"act"`
				Values []string `json:"values"`
			} `json:"actions"`
		} `json:"frames"`
	} `json:"turns"`
}

// sgdDomain returns a service's domain: its name without the "_N" suffix.
func sgdDomain(service string) string {
	if n := lastNumber(service); n != "" {
		return strings.TrimSuffix(service, "_"+n)
	}
	return service
}

func convertSGD(src *Source, s *Set) error { return convertSGDVariant(src, s, "") }

// convertSGDVariant converts SGD with the catalog taken from the SGD-X
// variant schemas sgd_x/data/<variant> (every service, intent and slot
// renamed and described anew by crowd workers), or from the original
// schemas when variant is "". The dialogues are the original ones: a label
// (original service and intent) maps to the variant by position, as
// SGD-X's own generate_sgdx_dialogues.py maps them.
func convertSGDVariant(src *Source, s *Set, variant string) error {
	trained := map[string]bool{}
	keep := map[string]string{}  // original <domain>_<intent> -> catalog name
	owner := map[string]string{} // catalog name -> original <domain>_<intent>
	for _, split := range []string{"dev", "test", "train"} {
		var services []sgdService
		if err := JSONFile(src, split+"/schema.json", &services); err != nil {
			return err
		}
		shown := services
		if variant != "" {
			// A fresh slice: decoding into shown would overwrite services.
			var v []sgdService
			rel := "sgd_x/data/" + variant + "/" + split + "/schema.json"
			if err := JSONFile(src, rel, &v); err != nil {
				return err
			}
			if err := sgdSameShape(services, v); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			shown = v
		}
		for i, svc := range services {
			if split == "train" {
				trained[svc.Name] = true
			}
			if err := addSGDService(s, svc, shown[i], keep, owner); err != nil {
				return fmt.Errorf("%s/schema.json: %w", split, err)
			}
		}
	}
	files, err := src.Glob("test/dialogues_*.json")
	if err != nil {
		return err
	}
	for _, f := range files {
		var dialogues []sgdDialogue
		if err := JSONFile(src, f, &dialogues); err != nil {
			return err
		}
		for _, d := range dialogues {
			for i, t := range d.Turns {
				if t.Speaker != "USER" {
					continue
				}
				var labels []string
				split := "test-seen"
				for _, fr := range t.Frames {
					for _, a := range fr.Actions {
						if a.Act != "INFORM_INTENT" {
							continue
						}
						for _, intent := range a.Values {
							key := sgdDomain(fr.Service) + "_" + intent
							if name, ok := keep[key]; ok {
								key = name
							}
							labels = appendNew(labels, key)
						}
						if !trained[fr.Service] {
							split = "test-unseen"
						}
					}
				}
				if len(labels) == 0 {
					continue
				}
				s.AddQuery(Query{Query: t.Utterance, ID: fmt.Sprintf("%s/%d", d.ID, i), Split: split, Lang: "en"}, labels)
			}
		}
	}
	return nil
}

// sgdSameShape checks that a variant schema lists the same services with
// the same number of intents and slots as the original, in order, since
// elements are matched by position.
func sgdSameShape(orig, variant []sgdService) error {
	if len(orig) != len(variant) {
		return fmt.Errorf("%d services, the original has %d", len(variant), len(orig))
	}
	for i := range orig {
		if len(orig[i].Intents) != len(variant[i].Intents) || len(orig[i].Slots) != len(variant[i].Slots) {
			return fmt.Errorf("service %s (variant of %s): intents or slots differ in number from the original", variant[i].Name, orig[i].Name)
		}
	}
	return nil
}

// addSGDService adds one tool per intent of svc, named and described as
// shown (svc itself, or its SGD-X variant). Sibling services of one domain
// offering the same intent become one tool: the first one's name is kept
// in keep, by the original <domain>_<intent>. owner guards against two
// different intents whose shown names fold together.
func addSGDService(s *Set, svc, shown sgdService, keep, owner map[string]string) error {
	type slot struct {
		name, desc string
		values     []string
	}
	slots := map[string]slot{} // by original slot name
	for i, sl := range svc.Slots {
		v := shown.Slots[i]
		sd := slot{name: v.Name, desc: v.Description}
		if v.IsCategorical {
			sd.values = v.PossibleValues
		}
		slots[sl.Name] = sd
	}
	for i, in := range svc.Intents {
		sh := shown.Intents[i]
		props := map[string]any{}
		add := func(name string) {
			sl, ok := slots[name]
			if !ok {
				sl = slot{name: name}
			}
			p := map[string]any{"type": "string", "description": sl.desc}
			if len(sl.values) > 0 {
				p["enum"] = sl.values
			}
			props[sl.name] = p
		}
		var required []string
		for _, r := range in.RequiredSlots {
			add(r)
			if sl, ok := slots[r]; ok {
				r = sl.name
			}
			required = append(required, r)
		}
		for o := range in.OptionalSlots {
			add(o)
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		key := sgdDomain(svc.Name) + "_" + in.Name
		name := sgdDomain(shown.Name) + "_" + sh.Name
		if prev, ok := keep[key]; ok {
			name = prev
		}
		desc := strings.TrimSuffix(strings.TrimSpace(sh.Description), ".") + ". " + strings.TrimSpace(shown.Description)
		got, err := s.AddTool(name, desc, schema)
		if err != nil {
			return fmt.Errorf("service %s: %w", shown.Name, err)
		}
		if k, taken := owner[got]; taken && k != key {
			return fmt.Errorf("service %s: intents %s and %s are both named %s", shown.Name, k, key, got)
		}
		keep[key], owner[got] = got, key
	}
	return nil
}

// sgdX converts SGD with the catalog of SGD-X variant n (1-5): the same
// requests and labels as sgd, every tool renamed and described anew.
func sgdX(n int) Converter {
	c := sgd()
	v := fmt.Sprintf("v%d", n)
	c.Name = fmt.Sprintf("sgd-x%d", n)
	c.Title = fmt.Sprintf("Schema-Guided Dialogue with the SGD-X %s schemas: the requests and labels of `sgd`, over the same intents renamed and described anew by crowd workers", v)
	c.Paper += "; SGD-X: A Benchmark for Robust Generalization in Schema-Guided Dialogue Systems (AAAI 2022, arXiv:2110.06800)"
	c.Rules = append([]string{
		"As `sgd`, except that every tool's name, description and parameters come from `sgd_x/data/" + v + "/{dev,test,train}/schema.json`, matched to the original schemas by position (services, intents, slots), as SGD-X's `generate_sgdx_dialogues.py` matches them; the dialogues and their labels are the original ones, mapped to the variant names.",
	}, c.Rules...)
	c.Caveats = append([]string{
		"Measure it beside `sgd`: the requests are identical, so the difference is what the wording of the catalog does to the search. Variant 5 is the furthest from the original wording.",
	}, c.Caveats...)
	c.Convert = func(src *Source, s *Set) error { return convertSGDVariant(src, s, v) }
	return c
}
