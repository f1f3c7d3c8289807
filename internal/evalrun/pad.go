package evalrun

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/names"
)

// Shape is how Pad makes distractors once the real tools run out.
type Shape int

const (
	// Recombined distractors are Synth's: tool A's name with a word of
	// tool B's name and a number, A's description followed by B's, and
	// both parameter lists.
	Recombined Shape = iota
	// Sentence distractors are A's name with a word of B's name and no
	// number (a name that already exists is skipped), A's description
	// followed by the first sentence of B's, and A's parameters.
	Sentence
)

func (s Shape) String() string {
	if s == Sentence {
		return "sentence"
	}
	return "recombined"
}

// Pad returns a catalog of n tools that holds every tool of own (so that
// a set's labels stay valid), real tools of pool (other sets'; a tool
// whose folded name is already there is left out) taken in an order fixed
// by a hash of their names, then distractors of the given shape
// made from all the real tools, until there are n (fewer when no new
// name can be made, which takes a tiny pool). A catalog of own alone is
// returned when n is at most its size. A padded catalog is ordered by a
// hash of the names, so the set's own tools are spread through it. The
// same arguments give the same catalog.
func Pad(own, pool []manifest.Tool, n int, shape Shape) []manifest.Tool {
	out := append(make([]manifest.Tool, 0, max(n, len(own))), own...)
	if n <= len(own) {
		return out
	}
	seen := make(map[string]bool, n)
	for _, t := range own {
		seen[names.Fold(t.Name)] = true
	}
	others := append([]manifest.Tool(nil), pool...)
	sort.SliceStable(others, func(i, j int) bool { return nameHash(others[i].Name) < nameHash(others[j].Name) })
	for _, t := range others {
		if len(out) == n {
			break
		}
		if k := names.Fold(t.Name); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	real := out
	r := rand.New(rand.NewPCG(uint64(shape)+2, uint64(n)))
	for i, tries := len(out), 0; len(out) < n && tries < 20*n; tries++ {
		a, b := real[r.IntN(len(real))], real[r.IntN(len(real))]
		var t manifest.Tool
		switch shape {
		case Sentence:
			t = manifest.Tool{Name: a.Name + lastWord(b.Name), Description: a.Description + " " + firstSentence(b.Description), Parameters: a.Parameters}
		default:
			t = manifest.Tool{Name: a.Name + lastWord(b.Name) + strconv.Itoa(i), Description: a.Description + ". " + b.Description, Parameters: mergeParams(a.Parameters, b.Parameters)}
		}
		k := names.Fold(t.Name)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, t)
		i++
	}
	// Catalog order says nothing of which tools are labelled: whatever
	// reads the catalog in order (the candidate list's round-robin) must
	// not meet the set's own tools first.
	sort.SliceStable(out, func(i, j int) bool { return nameHash(out[i].Name) < nameHash(out[j].Name) })
	return out
}

func nameHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// firstSentence is the text up to the first full stop followed by a space
// (or the end), at most 200 bytes.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) { // not in the middle of a rune
			s = s[:len(s)-1]
		}
	}
	return s
}

// PadPool is what a set's catalog is padded with: the tools of the other
// English sets (others, named by names; chinese marks the Chinese ones),
// but for a set that asks the same requests (SGD and its renamed variant
// SGD-X: padding one with the other would add correct tools nobody
// labelled), found by the requests the two share.
func PadPool(name string, queries []Query, others []NamedSet) []manifest.Tool {
	own := make(map[string]bool, len(queries))
	for _, q := range queries {
		own[q.Query] = true
	}
	var pool []manifest.Tool
	for _, o := range others {
		if o.Chinese || o.Name == name {
			continue
		}
		shared := 0
		for _, q := range o.Queries {
			if own[q.Query] {
				shared++
			}
		}
		if 10*shared > min(len(o.Queries), len(queries)) {
			continue // a variant of the same set
		}
		pool = append(pool, o.Tools...)
	}
	return pool
}

// NamedSet is one labelled set.
type NamedSet struct {
	Name    string
	Tools   []manifest.Tool
	Queries []Query
	Chinese bool // the catalog or the requests are Chinese
}

// MostlyChinese: more than half of the requests hold Chinese characters.
func MostlyChinese(qs []Query) bool {
	n := 0
	for _, q := range qs {
		for _, r := range q.Query {
			if r >= 0x4e00 && r <= 0x9fff {
				n++
				break
			}
		}
	}
	return 2*n > len(qs)
}
