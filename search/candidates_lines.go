package search

import (
	"fmt"
	"strings"

	"github.com/toolshed/toolshed/search/internal/text"
)

// CandidateFull is how many tools at the head of a candidate list always
// get their full line (CandidateLine); the tools after them get a short
// one (CandidateShortLine) unless the budget has room for more full lines.
const CandidateFull = 100

// CandidateTailWords is how many words of a tool's first sentence a short
// line keeps; in Chinese, three characters count as a word.
const CandidateTailWords = 4

// CandidateShortLine is one tool in the tail of a candidate list: its name
// and the first CandidateTailWords words of its description's first
// sentence, "name: first words\n".
func CandidateShortLine(name, description string) string {
	s := FirstSentence(description)
	// thirds counts a word as 3 and a Chinese character as 1.
	thirds, inWord, end := 0, false, len(s)
	for i, r := range s {
		switch {
		case text.IsHan(r):
			thirds++
			inWord = false
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			inWord = false
			continue
		case !inWord:
			thirds += 3
			inWord = true
		default:
			continue
		}
		if thirds > 3*CandidateTailWords {
			end = i
			break
		}
	}
	return name + ": " + strings.Join(strings.Fields(s[:end]), " ") + "\n"
}

// CandidateList is a candidate list fitted to a budget: the tools' names in
// list order, the list's text and its size.
type CandidateList struct {
	Names  []string
	Text   string
	Tokens int
	// Full is how many of the first tools got their full line; the rest
	// got a short one.
	Full int
}

// FitCandidates builds the list a selection model is sent for query q, in
// the order of Index.Candidates, within maxTools tools and budget units of
// count (tokens): first as many tools as fit with the first CandidateFull
// on full lines and the rest on short lines (a line that does not fit
// ends the list), then full lines for as many more of the first tools as
// the budget still has room for. So the list holds every tool that a list
// of full lines only would hold, and more when the budget is tight.
//
// describe returns a tool's description, or false to leave the tool out
// (a name the caller no longer knows); count returns a line's size.
func (ix *Index) FitCandidates(q string, maxTools, budget int, describe func(name string) (string, bool), count func(line string) (int, error)) (CandidateList, error) {
	type item struct {
		name, desc  string
		full        string // the full line
		fullN, size int    // the full line's size, and the size of the line the tool has
		short       bool   // the line is short
	}
	var items []item
	var err error
	used := 0
	ix.Candidates(q, func(name string) bool {
		if len(items) >= maxTools {
			return false
		}
		d, ok := describe(name)
		if !ok {
			return true
		}
		it := item{name: name, desc: d, full: CandidateLine(name, d)}
		if it.fullN, err = count(it.full); err != nil {
			return false
		}
		it.size = it.fullN
		if len(items) >= CandidateFull {
			var n int
			if n, err = count(CandidateShortLine(name, d)); err != nil {
				return false
			}
			if n < it.fullN { // so the list holds every tool full lines would
				it.size, it.short = n, true
			}
		}
		if used+it.size > budget {
			return false
		}
		used += it.size
		items = append(items, it)
		return true
	})
	if err != nil {
		return CandidateList{}, fmt.Errorf("search: candidate list: %w", err)
	}
	// Full lines for as many more of the first tools as the budget allows,
	// in list order.
	full := min(len(items), CandidateFull)
	for ; full < len(items); full++ {
		it := &items[full]
		extra := it.fullN - it.size
		if used+extra > budget {
			break
		}
		used += extra
		it.size, it.short = it.fullN, false
	}
	l := CandidateList{Names: make([]string, len(items)), Tokens: used, Full: full}
	var b strings.Builder
	for i, it := range items {
		l.Names[i] = it.name
		if it.short {
			b.WriteString(CandidateShortLine(it.name, it.desc))
		} else {
			b.WriteString(it.full)
		}
	}
	l.Text = b.String()
	return l, nil
}
