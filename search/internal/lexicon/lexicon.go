// Package lexicon reads the Chinese↔English concept lists used to expand
// queries across languages.
//
// The format is UTF-8 text, one concept a line:
//
//	# a comment
//	天气|气象|天气预报<TAB>weather|forecast
//
// Chinese terms separated by "|", one TAB, English terms separated by "|".
// English terms may be phrases ("exchange rate"). Blank lines and lines that
// start with "#" are ignored.
package lexicon

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

//go:embed zh_en.txt
var builtin string

// Concept is one line: terms that mean the same thing in either language.
type Concept struct {
	Zh []string
	En []string
}

// MaxLineBytes bounds one line of a lexicon file.
const MaxLineBytes = 4096

// Builtin returns the lexicon shipped with Toolshed.
func Builtin() []Concept {
	c, err := Parse(strings.NewReader(builtin), "builtin lexicon")
	if err != nil {
		panic(err) // the embedded file is tested; this is a build error
	}
	return c
}

// ParseFile reads a lexicon file.
func ParseFile(path string) ([]Concept, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a lexicon; source names it in errors ("file:line: reason").
func Parse(r io.Reader, source string) ([]Concept, error) {
	var out []Concept
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		if !utf8.ValidString(text) {
			return nil, fmt.Errorf("%s:%d: not valid UTF-8", source, line)
		}
		zh, en, ok := strings.Cut(text, "\t")
		if !ok || strings.Contains(en, "\t") {
			return nil, fmt.Errorf("%s:%d: want Chinese terms, one TAB, English terms", source, line)
		}
		c := Concept{Zh: split(zh), En: split(en)}
		if len(c.Zh) == 0 || len(c.En) == 0 {
			return nil, fmt.Errorf("%s:%d: both sides need at least one term", source, line)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", source, line+1, err)
	}
	return out, nil
}

func split(s string) []string {
	var out []string
	for _, t := range strings.Split(s, "|") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
