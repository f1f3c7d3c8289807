package sqlcap

import (
	"errors"
	"strings"
	"testing"
)

func TestGateAllows(t *testing.T) {
	for _, q := range []string{
		"SELECT 1",
		"select name from customers where city = 'update; drop table x' -- delete\n",
		"WITH m AS (SELECT strftime('%Y-%m', order_date) AS month, SUM(total) s FROM orders GROUP BY 1) SELECT * FROM m;",
		"EXPLAIN QUERY PLAN SELECT * FROM orders",
		`SELECT "insert", [delete], replace(name, 'a', 'b') FROM t /* update */`,
		"SELECT CASE WHEN x > 1 THEN 'a' ELSE 'b' END FROM t",
		"select $1::int, $$not; a statement$$",
		"VALUES (1), (2)",
	} {
		if err := CheckReadOnly(q); err != nil {
			t.Errorf("%q refused: %v", q, err)
		}
	}
}

// TestGateRefuses lists every refused form; docs/SQL.md quotes the messages.
func TestGateRefuses(t *testing.T) {
	for q, want := range map[string]string{
		"":                                 "empty statement",
		"-- just a comment":                "empty statement",
		"SELECT 1; SELECT 2":               "one statement per call (found 2",
		"SELECT 1; DROP TABLE orders":      "one statement per call",
		"DELETE FROM orders":               "only SELECT, WITH or EXPLAIN",
		"INSERT INTO t VALUES (1)":         "only SELECT, WITH or EXPLAIN",
		"UPDATE t SET x = 1":               "only SELECT, WITH or EXPLAIN",
		"CREATE TABLE t (x)":               "only SELECT, WITH or EXPLAIN",
		"DROP TABLE orders":                "only SELECT, WITH or EXPLAIN",
		"ALTER TABLE t ADD y":              "only SELECT, WITH or EXPLAIN",
		"ATTACH DATABASE '/tmp/x.db' AS x": "only SELECT, WITH or EXPLAIN",
		"PRAGMA writable_schema = 1":       "only SELECT, WITH or EXPLAIN",
		"VACUUM":                           "only SELECT, WITH or EXPLAIN",
		"COPY orders TO '/tmp/x'":          "only SELECT, WITH or EXPLAIN",
		"BEGIN":                            "only SELECT, WITH or EXPLAIN",
		"WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x": "DELETE is not allowed",
		"SELECT * INTO backup FROM orders":                      "INTO is not allowed",
		"SELECT load_extension('/tmp/evil.so')":                 "function load_extension is not allowed",
		"SELECT readfile('/etc/passwd')":                        "function readfile is not allowed",
		"SELECT pg_read_file('/etc/passwd')":                    "function pg_read_file is not allowed",
		"SELECT pg_sleep(100)":                                  "function pg_sleep is not allowed",
		"SELECT set_config('x', 'y', false)":                    "function set_config is not allowed",
		"SELECT 'unterminated":                                  "unterminated quoted text",
		"SELECT 1 /* open":                                      "unterminated /* comment",
		"EXPLAIN ANALYZE DELETE FROM t":                         "DELETE is not allowed",
	} {
		err := CheckReadOnly(q)
		if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
		}
	}
}

func FuzzGate(f *testing.F) {
	for _, s := range []string{"SELECT 1", "select 'a''b' -- c\n;", "/* x */ WITH a AS (SELECT 1) SELECT * FROM a", "$$", "$a$ x $a$", "[x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		CheckReadOnly(s) // must not panic or hang
	})
}
