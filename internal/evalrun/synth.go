package evalrun

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/host/manifest"
)

// Synth returns a catalog of n tools made from a real one (the scale
// measurements use Seal-Tools). Up to the set's size it is the set's first
// n tools; past it, the whole set plus tools recombined from two of its
// entries: the first's name with the second's last name word and a
// number, both descriptions, both parameter lists. The same n gives the
// same catalog.
func Synth(set []manifest.Tool, n int) []manifest.Tool {
	if n <= len(set) {
		return set[:n]
	}
	out := append(make([]manifest.Tool, 0, n), set...)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := len(set); i < n; i++ {
		a, b := set[r.IntN(len(set))], set[r.IntN(len(set))]
		out = append(out, manifest.Tool{
			Name:        a.Name + lastWord(b.Name) + strconv.Itoa(i),
			Description: a.Description + ". " + b.Description,
			Parameters:  mergeParams(a.Parameters, b.Parameters),
		})
	}
	return out
}

// lastWord is the last camelCase word of a name, capitalised.
func lastWord(name string) string {
	i := strings.LastIndexFunc(name, unicode.IsUpper)
	if i < 0 {
		i = 0
	}
	w := []rune(name[i:])
	if len(w) > 0 {
		w[0] = unicode.ToUpper(w[0])
	}
	return string(w)
}

// mergeParams joins two object schemas' properties (the first's win).
func mergeParams(a, b json.RawMessage) json.RawMessage {
	type schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var sa, sb schema
	json.Unmarshal(a, &sa)
	json.Unmarshal(b, &sb)
	m := schema{Type: "object", Properties: map[string]json.RawMessage{}}
	for k, v := range sb.Properties {
		m.Properties[k] = v
	}
	for k, v := range sa.Properties {
		m.Properties[k] = v
	}
	out, _ := json.Marshal(m) // encoding/json sorts map keys
	return out
}

// Sample takes n queries spread evenly over qs (all of them when n is 0
// or at least len(qs)).
func Sample(qs []Query, n int) []Query {
	if n <= 0 || n >= len(qs) {
		return qs
	}
	out := make([]Query, n)
	for i := range out {
		out[i] = qs[i*len(qs)/n]
	}
	return out
}
