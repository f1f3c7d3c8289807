// Package sqlcap is the host side of the "sql" capability: plugins send
// one SQL statement and its parameters through a host function; the host
// runs it read-only against an operator-named database and returns rows.
// The plugin never holds a connection or credentials.
//
// Read-only is enforced by the host, three times over: a statement gate
// (one statement; SELECT, WITH or EXPLAIN; no writes, DDL, ATTACH, PRAGMA,
// COPY, extension loading or file functions anywhere), a read-only
// connection (SQLite mode=ro, query_only) and a read-only transaction.
// Every query has a timeout, a row cap and a byte cap.
//
// A Service is safe for concurrent use.
package sqlcap

import (
	"fmt"
	"strings"
	"unicode"
)

// ErrRefused is wrapped by every refusal of the statement gate.
var ErrRefused = fmt.Errorf("sql: statement refused")

// forbiddenWords may not appear as bare words outside strings, quoted
// identifiers and comments: writes, DDL and what reaches past the query.
// They are reserved words in SQL, so no unquoted column can bear them.
var forbiddenWords = map[string]string{
	"insert": "writes", "update": "writes", "delete": "writes", "replace": "writes", "merge": "writes",
	"truncate": "writes", "into": "writes (SELECT INTO)", "create": "DDL", "drop": "DDL", "alter": "DDL",
	"grant": "DDL", "revoke": "DDL", "vacuum": "maintenance", "reindex": "maintenance",
	"attach": "attaching databases", "detach": "attaching databases", "pragma": "PRAGMA", "copy": "COPY",
	"begin": "transaction control", "commit": "transaction control", "rollback": "transaction control",
	"savepoint": "transaction control",
}

// forbiddenFuncs may not be called: they reach files, the network, native
// code or the server.
var forbiddenFuncs = map[string]string{
	"load_extension": "loading extensions", "readfile": "file access", "writefile": "file access",
	"edit": "file access", "fts3_tokenizer": "native code", "pg_read_file": "file access",
	"pg_read_binary_file": "file access", "pg_ls_dir": "file access", "pg_stat_file": "file access",
	"lo_import": "file access", "lo_export": "file access", "dblink": "network access",
	"dblink_exec": "network access", "pg_sleep": "sleeping", "set_config": "session settings",
	"pg_terminate_backend": "server control", "pg_cancel_backend": "server control",
	"pg_reload_conf": "server control",
}

type word struct {
	text string
	call bool // followed by "("
}

// CheckReadOnly reports whether sql is one read-only statement. The error
// says what was refused and why, for the model to correct itself.
func CheckReadOnly(sql string) error {
	words, statements, err := lex(sql)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if statements == 0 || len(words) == 0 {
		return fmt.Errorf("%w: empty statement", ErrRefused)
	}
	if statements > 1 {
		return fmt.Errorf("%w: one statement per call (found %d separated by ;)", ErrRefused, statements)
	}
	switch words[0].text {
	case "select", "with", "explain", "values":
	default:
		return fmt.Errorf("%w: only SELECT, WITH or EXPLAIN statements may run (this one starts with %s)", ErrRefused, strings.ToUpper(words[0].text))
	}
	for _, w := range words {
		if w.call {
			if why, bad := forbiddenFuncs[w.text]; bad {
				return fmt.Errorf("%w: function %s is not allowed (%s)", ErrRefused, w.text, why)
			}
			if w.text != "replace" { // replace(x, a, b) is a string function
				if why, bad := forbiddenWords[w.text]; bad {
					return fmt.Errorf("%w: %s is not allowed (%s; the database is read-only)", ErrRefused, strings.ToUpper(w.text), why)
				}
			}
			continue
		}
		if why, bad := forbiddenWords[w.text]; bad {
			return fmt.Errorf("%w: %s is not allowed (%s; the database is read-only)", ErrRefused, strings.ToUpper(w.text), why)
		}
	}
	return nil
}

// lex returns the lowercased bare words of sql (outside strings, quoted
// identifiers and comments) and the number of non-empty statements.
func lex(sql string) (words []word, statements int, err error) {
	r := []rune(sql)
	nonEmpty := false
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '-' && i+1 < len(r) && r[i+1] == '-':
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(r) && r[i+1] == '*':
			end := strings.Index(string(r[i+2:]), "*/")
			if end < 0 {
				return nil, 0, fmt.Errorf("unterminated /* comment")
			}
			i += 2 + len([]rune(string(r[i+2:])[:end])) + 1
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for ; j < len(r); j++ {
				if r[j] == c {
					if j+1 < len(r) && r[j+1] == c { // doubled quote
						j++
						continue
					}
					break
				}
			}
			if j >= len(r) {
				return nil, 0, fmt.Errorf("unterminated quoted text")
			}
			i = j
			nonEmpty = true
		case c == '[':
			j := i + 1
			for j < len(r) && r[j] != ']' {
				j++
			}
			i = j
			nonEmpty = true
		case c == '$' && i+1 < len(r) && (r[i+1] == '$' || unicode.IsLetter(r[i+1])):
			// PostgreSQL dollar quoting: $$ … $$ or $tag$ … $tag$.
			j := i + 1
			for j < len(r) && r[j] != '$' && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '_') {
				j++
			}
			if j >= len(r) || r[j] != '$' {
				continue // a parameter like $1 or a stray $
			}
			tag := string(r[i : j+1])
			rest := string(r[j+1:])
			end := strings.Index(rest, tag)
			if end < 0 {
				return nil, 0, fmt.Errorf("unterminated dollar-quoted text")
			}
			i = j + len([]rune(rest[:end])) + len([]rune(tag))
			nonEmpty = true
		case c == ';':
			if nonEmpty {
				statements++
			}
			nonEmpty = false
		case unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '_') {
				j++
			}
			k := j
			for k < len(r) && unicode.IsSpace(r[k]) {
				k++
			}
			words = append(words, word{text: strings.ToLower(string(r[i:j])), call: k < len(r) && r[k] == '('})
			i = j - 1
			nonEmpty = true
		case !unicode.IsSpace(c):
			nonEmpty = true
		}
	}
	if nonEmpty {
		statements++
	}
	return words, statements, nil
}
