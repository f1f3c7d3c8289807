// Command glossary is the bundled glossary plugin: business terms and
// metric definitions from the operator's glossary file, read through a
// read-only mount named "glossary" (glossary.json: a list of {term,
// aliases, definition, formula}).
package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/sdk"
)

type entry struct {
	Term       string   `json:"term"`
	Aliases    []string `json:"aliases"`
	Definition string   `json:"definition"`
	Formula    string   `json:"formula"`
}

type args struct {
	Term string `json:"term"`
}

func load() ([]entry, error) {
	data, err := sdk.ReadFile("glossary", "glossary.json")
	if err != nil {
		return nil, err
	}
	var es []entry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("the glossary file is not valid: %v", err)
	}
	return es, nil
}

func norm(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func init() {
	sdk.Handle("lookupGlossary", func(a args) (sdk.Result, error) {
		es, err := load()
		if err != nil {
			return sdk.Result{}, err
		}
		q := norm(a.Term)
		if q == "" {
			var terms []string
			for _, e := range es {
				terms = append(terms, e.Term)
			}
			return sdk.Text("The glossary has: %s", strings.Join(terms, ", ")), nil
		}
		var exact, partial []entry
		for _, e := range es {
			names := append([]string{e.Term}, e.Aliases...)
			for _, n := range names {
				n = norm(n)
				if n == q {
					exact = append(exact, e)
					break
				}
				if strings.Contains(n, q) || strings.Contains(q, n) {
					partial = append(partial, e)
					break
				}
			}
		}
		found := exact
		if len(found) == 0 {
			found = partial
		}
		if len(found) == 0 {
			var terms []string
			for _, e := range es {
				terms = append(terms, e.Term)
			}
			sort.Strings(terms)
			return sdk.Errorf("%q is not in the glossary. Terms it has: %s", a.Term, strings.Join(terms, ", ")), nil
		}
		var b strings.Builder
		for _, e := range found {
			fmt.Fprintf(&b, "%s", e.Term)
			if len(e.Aliases) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(e.Aliases, ", "))
			}
			fmt.Fprintf(&b, ": %s", e.Definition)
			if e.Formula != "" {
				fmt.Fprintf(&b, " Formula: %s", e.Formula)
			}
			b.WriteString("\n")
		}
		return sdk.Result{Content: strings.TrimRight(b.String(), "\n"), Structured: found}, nil
	})
}

func main() {}
