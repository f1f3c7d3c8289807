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
	return name + shortTail(description)
}

// shortTail is a short line after the names: ": first words\n".
func shortTail(description string) string {
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
	return ": " + strings.Join(strings.Fields(s[:end]), " ") + "\n"
}

// fullTail is a full line after the names: ": first sentence\n".
func fullTail(description string) string { return ": " + FirstSentence(description) + "\n" }

// summaryKey is what tools must have in common to share a line: their
// descriptions' first sentences, case, spacing and closing punctuation
// aside.
func summaryKey(description string) string {
	s := strings.ToLower(strings.Join(strings.Fields(FirstSentence(description)), " "))
	return strings.TrimRight(s, " .。!！?？…:：;；")
}

// CandidateList is a candidate list fitted to a budget: the tools' names in
// list order, the list's text and its size.
type CandidateList struct {
	Names  []string
	Text   string
	Tokens int
	// Lines is the number of lines; Full is how many of the first lines
	// are full (the rest are short).
	Lines, Full int
}

// FitCandidates builds the list a selection model is sent for query q, in
// the order of Index.Candidates (semantic is its semantic ranking), within maxTools tools and budget units of
// count (tokens).
//
// Tools whose descriptions have the same first sentence (case, spacing and
// closing punctuation aside) share one line, "a, b, c: sentence\n", placed
// where the first of them comes: a family of near-copies costs a name
// each, not a line each. The first CandidateFull lines are full and the
// rest short (CandidateShortLine's first words) where that is smaller; a
// tool that does not fit ends the list. Then, while the budget has room,
// short lines are made full again, in list order. So the list holds every
// tool that a list of full lines only would hold, and more when the budget
// is tight.
//
// describe returns a tool's description, or false to leave the tool out
// (a name the caller no longer knows); count returns a text's size. A
// line's size is counted as the sum of its parts (its first name, each
// further ", name", its tail), which may differ from the joined line's by
// a unit or so a part.
func (ix *Index) FitCandidates(q string, semantic []string, maxTools, budget int, describe func(name string) (string, bool), count func(text string) (int, error)) (CandidateList, error) {
	type line struct {
		names         []string
		desc          string // the first tool's description
		head          int    // the size of the names, "a, b"
		fullN, shortN int    // the size of the full and the short tail
		short         bool
	}
	var lines []*line
	byKey := map[string]*line{}
	var err error
	used, tools := 0, 0
	size := func(l *line) int {
		if l.short {
			return l.head + l.shortN
		}
		return l.head + l.fullN
	}
	ix.Candidates(q, semantic, func(name string) bool {
		if tools >= maxTools {
			return false
		}
		d, ok := describe(name)
		if !ok {
			return true
		}
		key := summaryKey(d)
		if l, ok := byKey[key]; ok {
			var n int
			if n, err = count(", " + name); err != nil || used+n > budget {
				return false
			}
			l.names = append(l.names, name)
			l.head += n
			used += n
			tools++
			return true
		}
		l := &line{names: []string{name}, desc: d}
		if l.head, err = count(name); err != nil {
			return false
		}
		if l.fullN, err = count(fullTail(d)); err != nil {
			return false
		}
		l.shortN = l.fullN
		if len(lines) >= CandidateFull {
			var n int
			if n, err = count(shortTail(d)); err != nil {
				return false
			}
			if n < l.fullN { // so the list holds every tool full lines would
				l.shortN, l.short = n, true
			}
		}
		if used+size(l) > budget {
			return false
		}
		used += size(l)
		lines = append(lines, l)
		byKey[key] = l
		tools++
		return true
	})
	if err != nil {
		return CandidateList{}, fmt.Errorf("search: candidate list: %w", err)
	}
	// Full lines for as many more of the first lines as the budget allows,
	// in list order.
	full := min(len(lines), CandidateFull)
	for ; full < len(lines); full++ {
		l := lines[full]
		extra := l.fullN - l.shortN
		if used+extra > budget {
			break
		}
		used += extra
		l.short = false
	}
	out := CandidateList{Names: make([]string, 0, tools), Tokens: used, Lines: len(lines), Full: full}
	var b strings.Builder
	for _, l := range lines {
		out.Names = append(out.Names, l.names...)
		b.WriteString(strings.Join(l.names, ", "))
		if l.short {
			b.WriteString(shortTail(l.desc))
		} else {
			b.WriteString(fullTail(l.desc))
		}
	}
	out.Text = b.String()
	return out, nil
}
