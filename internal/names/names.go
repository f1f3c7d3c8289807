// Package names holds the one rule by which tool names are compared.
package names

import "strings"

// Fold returns the form in which tool names must differ: lowercase, without
// _ - . and spaces, so "execute_sql", "ExecuteSQL" and "executeSql" meet.
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch r {
		case '_', '-', '.', ' ':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
