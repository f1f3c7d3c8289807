package text

import "strings"

// englishStop are words that carry no information for choosing a tool.
// The list is deliberately short: verbs such as "get", "find" or "list"
// stay, because tool names are made of them.
var englishStop = setOf(`a about above after again all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its
itself just let me more most my myself no nor not now of off on once only or other our ours
ourselves out over own please same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very via was we were
what when where which while who whom why will with would you your yours yourself yourselves
eg etc ie tell want need like give help using use don doesn didn isn aren won ll ve re
whats hey hi thanks thank kindly`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// stemKeep are words the suffix rules would damage; they are kept as they are.
var stemKeep = setOf(`news series species physics mathematics economics statistics analytics
always perhaps whereas has was does is this its gas bus plus bonus campus virus canvas atlas
alias bias chaos corpus census status radius genus axis basis thesis analysis emphasis
diagnosis synopsis hypothesis lens minus focus nexus sinus versus
embed shed bed red seed speed need feed breed hundred sacred naked wicked
during nothing something anything everything thing string spring bring king ring sing wing
morning evening wedding ceiling ping ding pudding`)

// Stem applies a light English normaliser: plurals, -ing and -ed, a final
// -y after a consonant and a final silent -e are folded so that "queries",
// "query" and "querying" (or "create", "created", "creating") meet.
// The input must be lowercase ASCII letters; anything else is returned as is.
func Stem(w string) string {
	if len(w) <= 3 || stemKeep[w] {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	// Plurals.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "i"
	case strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zzes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	// -ing and -ed.
	stripped := false
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "i"
	case strings.HasSuffix(w, "ing") && len(w) >= 6 && hasVowel(w[:len(w)-3]):
		w = w[:len(w)-3]
		stripped = true
	case strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") && len(w) >= 5 && hasVowel(w[:len(w)-2]):
		w = w[:len(w)-2]
		stripped = true
	}
	if stripped {
		n := len(w)
		if n >= 4 && w[n-1] == w[n-2] && !isVowel(w[n-1]) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z' {
			w = w[:n-1] // stopped → stop, running → run
		}
	}
	// Final -y after a consonant, final silent -e.
	n := len(w)
	if n > 3 && w[n-1] == 'y' && !isVowel(w[n-2]) {
		w = w[:n-1] + "i"
	} else if n > 3 && w[n-1] == 'e' && w[n-2] != 'e' {
		w = w[:n-1]
	}
	return w
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}

func hasVowel(s string) bool {
	for i := 0; i < len(s); i++ {
		if isVowel(s[i]) || s[i] == 'y' {
			return true
		}
	}
	return false
}

// splitIdentifier splits one run of ASCII letters and digits at camelCase,
// PascalCase and letter/digit boundaries: "getHTTP2Status" → get, HTTP, 2,
// Status, given as byte ranges. Separators (_ - . and the rest) are handled
// by the caller.
func splitIdentifier(s string, emit func(start, end int)) {
	start := 0
	kind := func(c byte) int {
		switch {
		case c >= 'a' && c <= 'z':
			return 1
		case c >= 'A' && c <= 'Z':
			return 2
		default:
			return 3
		}
	}
	for i := 1; i < len(s); i++ {
		prev, cur := kind(s[i-1]), kind(s[i])
		if s[i] == 's' && prev == 2 && i >= 2 && kind(s[i-2]) == 2 && (i+1 == len(s) || kind(s[i+1]) != 1) {
			// An acronym's plural: UUIDs, getURLs, APIsList → UUID, URL,
			// API (not UUI Ds); the s is dropped, as the stemmer would
			// not know "apis" for a plural.
			if start < i {
				emit(start, i)
			}
			start = i + 1
			continue
		}
		cut := false
		switch {
		case prev == 3 && cur != 3, prev != 3 && cur == 3:
			cut = true // digit boundary
		case prev == 1 && cur == 2:
			cut = true // camelCase
		case prev == 2 && cur == 2 && i+1 < len(s) && kind(s[i+1]) == 1:
			// HTTPServer → HTTP Server, unless the lower case that
			// follows is an acronym's plural s (above) or a connective
			// written in lower case after the acronym (below).
			cut = !(s[i+1] == 's' && (i+2 == len(s) || kind(s[i+2]) != 1)) && !connectiveAt(s, i+1)
		case prev == 2 && cur == 1 && i >= 2 && kind(s[i-2]) == 2 && connectiveAt(s, i):
			// An acronym, then a connective in lower case:
			// getAccountIDfromName → ID from, JPEGtoPNG → JPEG to PNG
			// (not I Dfrom, JPE Gto).
			cut = true
		}
		if cut && start < i {
			emit(start, i)
			start = i
		}
	}
	if start < len(s) {
		emit(start, len(s))
	}
}

// connectives are the lower-case words an identifier puts between two
// acronyms or after one (JPEGtoPNG, IDfrom). Only those that do not end a
// capitalised word: "or", "in", "and", "as", "on", "at" would take
// IDForEmail, CPUMin, USBand, APIHas, BBCon for an acronym and a
// connective (IDF or, CPUM in).
var connectives = map[string]bool{"to": true, "from": true, "into": true, "with": true,
	"via": true, "per": true, "by": true, "of": true, "for": true, "vs": true}

// connectiveAt reports whether the run of lower-case letters of s that
// starts at k is a connective.
func connectiveAt(s string, k int) bool {
	j := k
	for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
		j++
	}
	return connectives[s[k:j]]
}

// asciiLower lowercases ASCII letters, allocating only when it must.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
