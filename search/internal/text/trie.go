package text

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// wordTrie is the Chinese dictionary as a trie over characters: a node is a
// prefix of some word, and weighs that word's route weight when the prefix
// is a word itself (notWord when it is not). Walking it character by
// character from a position finds every word starting there without
// hashing a growing substring. Children are sorted arrays; the root's
// children in the main Han blocks are a direct table.
type wordTrie struct {
	root    []int32 // rune-rootLo → 1 + node of that first character; 0: none
	nodes   []trieNode
	kids    []rune  // the children of node n: kids[nodes[n].lo:nodes[n].hi], ascending
	kidNode []int32 // parallel to kids
}

type trieNode struct {
	weight float64
	lo, hi int32
}

// rootLo and rootHi bound the first characters the root table covers
// (CJK Extension A and the Unified Ideographs).
const rootLo, rootHi = 0x3400, 0xA000

// dictWord is one entry for newWordTrie: Han text and its weight (notWord
// for an entry that only makes text a prefix).
type dictWord struct {
	text   string
	weight float64
}

func newWordTrie(words []dictWord) *wordTrie {
	words = sortWords(words)
	t := &wordTrie{nodes: make([]trieNode, 1, len(words)*2), root: make([]int32, rootHi-rootLo)}
	t.nodes[0].weight = notWord
	t.fill(0, words, 0)
	for i := t.nodes[0].lo; i < t.nodes[0].hi; i++ {
		if r := t.kids[i]; r >= rootLo && r < rootHi {
			t.root[r-rootLo] = t.kidNode[i] + 1
		}
	}
	return t
}

// fill makes the subtree of node n from ws, sorted words that all begin
// with the node's prefix, pos bytes long.
func (t *wordTrie) fill(n int32, ws []dictWord, pos int) {
	t.nodes[n].weight = notWord
	for len(ws) > 0 && len(ws[0].text) == pos {
		if ws[0].weight != notWord {
			t.nodes[n].weight = ws[0].weight
		}
		ws = ws[1:]
	}
	type group struct {
		r    rune
		a, b int
		size int
	}
	var groups []group
	for i := 0; i < len(ws); {
		r, size := utf8.DecodeRuneInString(ws[i].text[pos:])
		j := i + 1
		for j < len(ws) && ws[j].text[pos:pos+size] == ws[i].text[pos:pos+size] {
			j++
		}
		groups = append(groups, group{r, i, j, size})
		i = j
	}
	lo := int32(len(t.kids))
	for _, g := range groups {
		t.kids = append(t.kids, g.r)
		t.kidNode = append(t.kidNode, int32(len(t.nodes)))
		t.nodes = append(t.nodes, trieNode{})
	}
	t.nodes[n].lo, t.nodes[n].hi = lo, int32(len(t.kids))
	for gi, g := range groups {
		t.fill(t.kidNode[lo+int32(gi)], ws[g.a:g.b], pos+g.size)
	}
}

// child returns the child of node n for character r, or -1.
func (t *wordTrie) child(n int32, r rune) int32 {
	if n == 0 && r >= rootLo && r < rootHi {
		return t.root[r-rootLo] - 1
	}
	lo, hi := t.nodes[n].lo, t.nodes[n].hi
	for hi-lo > 8 {
		m := int32(uint32(lo+hi) >> 1)
		if t.kids[m] < r {
			lo = m + 1
		} else {
			hi = m + 1 // m may be r
		}
	}
	for ; lo < hi; lo++ {
		if k := t.kids[lo]; k >= r {
			if k == r {
				return t.kidNode[lo]
			}
			break
		}
	}
	return -1
}

// find reports the weight of s and whether s is a node (a word or a
// prefix of one).
func (t *wordTrie) find(s string) (float64, bool) {
	n := int32(0)
	for _, r := range s {
		if n = t.child(n, r); n < 0 {
			return 0, false
		}
	}
	return t.nodes[n].weight, n != 0
}

// sortWords sorts words by text. A dictionary file is usually sorted
// already, with a few words added after it: the sorted head is kept, the
// tail sorted and merged in.
func sortWords(words []dictWord) []dictWord {
	cmp := func(a, b dictWord) int { return strings.Compare(a.text, b.text) }
	head := 1
	for head < len(words) && words[head-1].text <= words[head].text {
		head++
	}
	if head >= len(words) {
		return words
	}
	tail := slices.Clone(words[head:])
	slices.SortStableFunc(tail, cmp)
	out := make([]dictWord, 0, len(words))
	a := words[:head]
	for len(a) > 0 && len(tail) > 0 {
		if cmp(tail[0], a[0]) < 0 {
			out, tail = append(out, tail[0]), tail[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), tail...)
}
