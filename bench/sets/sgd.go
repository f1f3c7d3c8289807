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

func convertSGD(src *Source, s *Set) error {
	trained := map[string]bool{}
	for _, split := range []string{"dev", "test", "train"} {
		var services []sgdService
		if err := JSONFile(src, split+"/schema.json", &services); err != nil {
			return err
		}
		for _, svc := range services {
			if split == "train" {
				trained[svc.Name] = true
			}
			if err := addSGDService(s, svc); err != nil {
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
							labels = appendNew(labels, sgdDomain(fr.Service)+"_"+intent)
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

// addSGDService adds one tool per intent of svc.
func addSGDService(s *Set, svc sgdService) error {
	type slot struct {
		desc   string
		values []string
	}
	slots := map[string]slot{}
	for _, sl := range svc.Slots {
		sd := slot{desc: sl.Description}
		if sl.IsCategorical {
			sd.values = sl.PossibleValues
		}
		slots[sl.Name] = sd
	}
	for _, in := range svc.Intents {
		props := map[string]any{}
		add := func(name string) {
			p := map[string]any{"type": "string", "description": slots[name].desc}
			if v := slots[name].values; len(v) > 0 {
				p["enum"] = v
			}
			props[name] = p
		}
		for _, r := range in.RequiredSlots {
			add(r)
		}
		for o := range in.OptionalSlots {
			add(o)
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(in.RequiredSlots) > 0 {
			schema["required"] = in.RequiredSlots
		}
		desc := strings.TrimSuffix(strings.TrimSpace(in.Description), ".") + ". " + strings.TrimSpace(svc.Description)
		if _, err := s.AddTool(sgdDomain(svc.Name)+"_"+in.Name, desc, schema); err != nil {
			return fmt.Errorf("service %s: %w", svc.Name, err)
		}
	}
	return nil
}
