package sqlcap

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/sdk/abi"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestSQLiteHostileStatements sends statements that write, attach, change
// pragmas, create temporary objects or run a second statement, hidden in
// every way the old gate missed and more. None may run: each is an error,
// the database file stays byte-identical and no file appears.
func TestSQLiteHostileStatements(t *testing.T) {
	s, path := demo(t, Options{Timeout: 2 * time.Second})
	dir := filepath.Dir(path)
	target := filepath.Join(dir, "pwned.db")
	before := fileSum(t, path)
	ctx := context.Background()
	for _, q := range []string{
		// The escape of issue 13: a PostgreSQL dollar quote is a variable
		// or part of a name to SQLite; what follows must not run.
		"SELECT 1 AS x$q$; COMMIT; PRAGMA query_only=0; ATTACH 'file:" + path + "?mode=rw' AS w; UPDATE w.orders SET total=0; VACUUM INTO '" + target + "'; SELECT 1 AS y$q$",
		"SELECT $q$; DELETE FROM orders; SELECT $q$",
		"SELECT 1; DELETE FROM orders",
		"SELECT 1 /* x */ ; -- y\n UPDATE orders SET total = 0",
		"VACUUM INTO '" + target + "'",
		"ATTACH DATABASE '" + target + "' AS x",
		"ATTACH 'file:" + path + "?mode=rw' AS w",
		"DETACH main",
		"PRAGMA query_only=0",
		"PRAGMA writable_schema=1",
		"SELECT * FROM pragma_writable_schema",
		"SELECT * FROM pragma_integrity_check",
		"SELECT * FROM pragma_database_list",
		"SELECT * FROM pragma_cache_size(1)",
		"CREATE TEMP VIEW orders AS SELECT 1 AS hacked",
		"CREATE TEMP TABLE t(x)",
		"CREATE TEMP TRIGGER tr AFTER INSERT ON orders BEGIN SELECT 1; END",
		"CREATE TABLE t(x)",
		"DROP TABLE orders",
		"ALTER TABLE orders RENAME TO o",
		"CREATE INDEX i ON orders(total)",
		"INSERT INTO orders(order_id) VALUES (99999)",
		"REPLACE INTO customers(customer_id) VALUES (1)",
		"UPDATE sqlite_master SET sql = '' WHERE name = 'orders'",
		"DELETE FROM orders RETURNING order_id",
		"WITH x AS (SELECT 1) DELETE FROM orders",
		"WITH x AS (SELECT 1) INSERT INTO orders(order_id) SELECT 99999 FROM x",
		"EXPLAIN DELETE FROM orders",
		"BEGIN",
		"COMMIT",
		"SAVEPOINT a",
		"ANALYZE",
		"REINDEX",
		"VACUUM",
		"SELECT load_extension('/tmp/evil.so')",
		"SELECT fts3_tokenizer('simple')",
		"SELECT sqlite_log(1, 'x')",
		"SELECT readfile('/etc/passwd')",
		"SELECT writefile('" + target + "', 'x')",
		"SELECT * FROM temp.sqlite_master",
		"",
		"-- only a comment",
	} {
		_, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q})
		if err == nil {
			t.Errorf("%q ran", q)
			continue
		}
		if q != "" && !strings.HasPrefix(q, "--") && strings.Contains(q, "readfile") == false && !errors.Is(err, ErrRefused) &&
			!strings.Contains(err.Error(), "no such function") {
			t.Logf("%q: %v (an error, not a refusal)", q, err)
		}
	}
	if fileSum(t, path) != before {
		t.Fatal("the database file changed")
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was created: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the database's directory holds %d entries, want only the database", len(entries))
	}
	// Messages say what was refused and why.
	for q, want := range map[string]string{
		"SELECT 1; SELECT 2":                     "one statement per call",
		"DELETE FROM orders":                     "writing to orders is not allowed",
		"CREATE TEMP VIEW v AS SELECT 1":         "temporary objects",
		"PRAGMA query_only=0":                    "PRAGMA query_only is not allowed",
		"SELECT sqlite_log(1, 'x')":              "function sqlite_log is not available",
		"ATTACH 'x.db' AS x":                     "ATTACH",
		"VACUUM INTO '" + target + "'":           "read-only",
		"SELECT * FROM pragma_database_list":     "pragma_database_list is not available",
		"SELECT name FROM customers WHERE x = ?": "no such column",
	} {
		if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
		}
	}
	// What a read-only query needs still works: schema pragmas as tables,
	// sqlite_master, recursive CTEs, JSON, window functions, EXPLAIN,
	// comments and whitespace after the statement.
	for _, q := range []string{
		"SELECT name FROM pragma_table_info('orders')",
		`SELECT "from", "table", "to" FROM pragma_foreign_key_list('orders')`,
		"SELECT name FROM sqlite_master WHERE type = 'table'",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10) SELECT sum(x) FROM c",
		"SELECT json_object('n', count(*)) FROM orders",
		"SELECT order_id, rank() OVER (ORDER BY total DESC) FROM orders LIMIT 3",
		"EXPLAIN QUERY PLAN SELECT * FROM orders WHERE order_date = '2025-01-01'",
		"SELECT 1 AS x$q$",
		"SELECT 1; -- done\n /* really */ ",
		"VALUES (1), (2)",
	} {
		if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q}); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
}

// TestSQLiteNoStateBetweenQueries: nothing one query does is seen by the
// next, even on the same Service and many at once.
func TestSQLiteNoStateBetweenQueries(t *testing.T) {
	s, _ := demo(t, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range []string{
				"SELECT 1 AS x$q$; CREATE TEMP VIEW orders AS SELECT 1 AS hacked; SELECT 1 AS y$q$",
				"CREATE TEMP VIEW orders AS SELECT 1 AS hacked",
				"PRAGMA case_sensitive_like=1",
			} {
				s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q})
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 8; i++ {
		r, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT * FROM orders LIMIT 1"})
		if err != nil || len(r.Columns) != 5 || r.Columns[0] != "order_id" {
			t.Fatalf("orders is not the table: %v %v", r, err)
		}
		r, err = s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT count(*) FROM sqlite_temp_master"})
		if err != nil || r.Rows[0][0] != int64(0) {
			t.Fatalf("temporary objects: %v %v", r, err)
		}
		r, err = s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT 'a' LIKE 'A'"})
		if err != nil || r.Rows[0][0] != int64(1) {
			t.Fatalf("a pragma carried over: %v %v", r, err)
		}
	}
}

// rss reads VmRSS and VmHWM (peak) of this process in KiB.
func rss(t *testing.T) (cur, peak int64) {
	t.Helper()
	c, ok := procmem.Self("VmRSS")
	if !ok {
		t.Skip("no /proc/self/status")
	}
	p, _ := procmem.Self("VmHWM")
	return c >> 10, p >> 10
}

// resetPeak makes VmHWM start again from the current RSS.
func resetPeak(t *testing.T) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// TestSQLiteCostBounded: statements that want huge memory or endless time
// fail fast, with the host's peak RSS flat, one at a time and eight at once.
func TestSQLiteCostBounded(t *testing.T) {
	const deadline = 2 * time.Second
	s, path := demo(t, Options{Timeout: deadline})
	before := fileSum(t, path)
	ctx := context.Background()
	hostile := map[string]time.Duration{ // statement → at most this long
		"SELECT length(randomblob(900000000))":                                                     time.Second,
		"SELECT length(printf('%.*c', 900000000, 'x'))":                                            time.Second,
		"SELECT length(zeroblob(900000000))":                                                       time.Second,
		"SELECT length(replace(hex(randomblob(1000000)), 'A', hex(randomblob(1000000))))":          time.Second,
		"SELECT length(group_concat(hex(randomblob(100000)))) FROM orders":                         deadline + time.Second,
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c":     deadline + time.Second,
		"SELECT count(*) FROM orders a, orders b, orders c":                                        deadline + time.Second,
		"SELECT a.order_id FROM orders a, order_items b ORDER BY random(), a.status || b.order_id": deadline + time.Second,
		"SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000):                    time.Second,
		"SELECT 1 + " + strings.Repeat("1 + ", 3000) + "1":                                         time.Second,
		"SELECT '" + strings.Repeat("x", 200_000) + "'":                                            time.Second,
	}
	// The engine checks the deadline every 1,000 instructions; one
	// instruction may handle a value of up to MaxValueBytes, which under
	// the race detector takes long: slack for a noisy machine.
	for q, limit := range hostile {
		if limit > time.Second {
			hostile[q] = limit + time.Second
		}
	}
	run := func(q string, limit time.Duration) {
		start := time.Now()
		_, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q})
		took := time.Since(start)
		if err == nil {
			t.Errorf("%.60q ran to completion", q)
		}
		// Stopped, not run out (these statements run for minutes or
		// exhaust memory): the bound is ten times the figure measured on a
		// quiet machine, which a machine ten times slower meets.
		if took > 10*limit {
			t.Errorf("%.60q took %s, over ten times its %s (%v)", q, took, limit, err)
		}
	}
	for _, concurrent := range []bool{false, true} {
		resetPeak(t)
		base, _ := rss(t)
		var wg sync.WaitGroup
		for q, limit := range hostile {
			if concurrent {
				wg.Add(1)
				go func() { defer wg.Done(); run(q, 2*limit+deadline) }()
			} else {
				run(q, limit)
			}
		}
		wg.Wait()
		_, peak := rss(t)
		// One query's engine is capped at 64 MiB; four run at once.
		bound := int64(80 << 10) // MaxMemory 64 MiB and some slack
		if concurrent {
			bound = 4 * 80 << 10
		}
		t.Logf("concurrent=%v: RSS %d MiB before, peak %d MiB", concurrent, base>>10, peak>>10)
		if peak-base > bound {
			t.Errorf("concurrent=%v: peak RSS grew by %d MiB (bound %d MiB)", concurrent, (peak-base)>>10, bound>>10)
		}
	}
	// A huge parameter is refused before it reaches the engine.
	if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT length(?)", Params: []any{strings.Repeat("x", 5<<20)}}); err == nil {
		t.Error("a 5 MiB parameter was accepted")
	}
	if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT 1" + strings.Repeat(" ", 200_000)}); err == nil {
		t.Error("a 200 kB statement was accepted")
	}
	if fileSum(t, path) != before {
		t.Fatal("the database file changed")
	}
	// The service still answers.
	if r, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT count(*) FROM orders"}); err != nil || r.Rows[0][0] != int64(3151) {
		t.Fatalf("after the hostile queries: %v %v", r, err)
	}
}
