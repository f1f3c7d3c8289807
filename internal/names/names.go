// Package names holds the rules by which tool names are compared: Fold
// (case and separators) and Skeleton (look-alike characters), the names
// the host reserves for itself, and Set, which refuses a name that meets
// one already in it under either rule.
//
// The functions are pure and safe for concurrent use; a Set is not.
package names

import (
	"strings"
	"unicode"
)

// Fold returns the form in which tool names must differ: lowercase, without
// _ - . and spaces, so "execute_sql", "ExecuteSQL" and "executeSql" meet.
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		if isSeparator(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isSeparator(r rune) bool {
	switch r {
	case '_', '-', '.', ' ':
		return true
	}
	return false
}

// Skeleton returns the form in which tool names must look different: two
// names with the same skeleton can be told apart by a reader (or a model)
// only by the shape of a glyph, as in "tooI_search" (capital i) and
// "tool_search", or "executeSqI" and "executeSql".
//
// Tool names are ASCII (a manifest rule), so the skeleton needs only the
// ASCII look-alikes. It is computed in three steps:
//
//  1. before case folding, the characters whose look-alike depends on case
//     become their prototype: I (capital i), 1 and | become l; 0 becomes o;
//  2. the name is folded as Fold does (lowercase, no _ - . or spaces);
//  3. each remaining letter that reads as a sequence becomes it: m → rn,
//     w → vv, d → cl.
//
// Sources: the rows of Unicode TR39 confusables.txt (Unicode 10.0 to 16.0)
// whose source is an ASCII character that a tool name may hold:
//
//	0030 ; 004F  ( 0 → O )  DIGIT ZERO → LATIN CAPITAL LETTER O
//	0031 ; 006C  ( 1 → l )  DIGIT ONE → LATIN SMALL LETTER L
//	0049 ; 006C  ( I → l )  LATIN CAPITAL LETTER I → LATIN SMALL LETTER L
//	006D ; 0072 006E  ( m → rn )  LATIN SMALL LETTER M → R, N
//	007C ; 006C  ( | → l )  VERTICAL LINE → LATIN SMALL LETTER L
//
// (the other ASCII rows, " and `, cannot occur in a tool name), and two
// sequences of the same kind as rn/m that TR39 does not list because it maps
// single characters only, the classic look-alikes of typosquatted domain
// names: vv/w and cl/d. Letters are folded to lowercase, so O/o and the
// TR39 prototype O meet.
//
// Skeleton is not a superset of Fold ("Id" and "id" fold alike; their
// skeletons differ, I being l): compare names with Clash, or keep them in
// a Set, which apply both.
func Skeleton(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 4)
	for _, r := range strings.TrimSpace(s) {
		switch r {
		case 'I', '1', '|':
			r = 'l'
		case '0':
			r = 'o'
		}
		if isSeparator(r) {
			continue
		}
		switch r = unicode.ToLower(r); r {
		case 'm':
			b.WriteString("rn")
		case 'w':
			b.WriteString("vv")
		case 'd':
			b.WriteString("cl")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Clash reports whether two tool names are too close to be offered side by
// side: they fold alike (Fold) or look alike (Skeleton).
func Clash(a, b string) bool {
	return Fold(a) == Fold(b) || Skeleton(a) == Skeleton(b)
}

// ToolSearch is the host's own search tool, always offered.
const ToolSearch = "tool_search"

// AlwaysOn lists the always-on tools the host ships (host/builtin), sorted.
// A plugin may not use any of these names, nor a name that clashes with
// one, whether or not the operator enabled the tool: enabling it later
// must not change which tool a name means.
var alwaysOn = [...]string{"current_time", "grep", "list_dir", "read_file", "shell", "skill", "todo_write"}

// AlwaysOn returns the names of the host's always-on tools, sorted.
func AlwaysOn() []string { return append([]string(nil), alwaysOn[:]...) }

// CallTool is the MCP front end's opt-in dispatcher (server.mcp.dispatcher),
// which calls a discovered tool by name.
const CallTool = "call_tool"

// Reserved returns every name the host reserves: tool_search, call_tool
// and the always-on tools.
func Reserved() []string { return append([]string{ToolSearch, CallTool}, alwaysOn[:]...) }

// Set holds tool names with a value each (their owner) and finds the name
// a new one clashes with. The zero value is an empty set. A Set is not safe
// for concurrent use.
type Set[V any] struct {
	fold, skel map[string]entry[V]
}

type entry[V any] struct {
	name  string
	value V
}

// Add puts name in the set with its value. A name already in the set
// (under either key) keeps its first value.
func (s *Set[V]) Add(name string, value V) {
	if s.fold == nil {
		s.fold, s.skel = map[string]entry[V]{}, map[string]entry[V]{}
	}
	e := entry[V]{name, value}
	if _, ok := s.fold[Fold(name)]; !ok {
		s.fold[Fold(name)] = e
	}
	if _, ok := s.skel[Skeleton(name)]; !ok {
		s.skel[Skeleton(name)] = e
	}
}

// Find returns the name in the set that name clashes with, and its value.
// A name that folds like one in the set is reported before a look-alike.
func (s *Set[V]) Find(name string) (other string, value V, ok bool) {
	e, ok := s.fold[Fold(name)]
	if !ok {
		e, ok = s.skel[Skeleton(name)]
	}
	return e.name, e.value, ok
}
