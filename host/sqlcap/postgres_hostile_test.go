package sqlcap

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/sdk/abi"
)

// TestPostgresHostile tries what escaped on PostgreSQL and more: a second
// statement hidden from a lexer, file and server functions however they
// are spelled, killing another backend, settings carried into the next
// query, and a row too large for the host's memory.
func TestPostgresHostile(t *testing.T) {
	dsn, admin := pgDemo(t)
	ctx := context.Background()

	// Open refuses the superuser, and a role that may write or signal,
	// unless allowed explicitly.
	if _, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: dsn}}, Options{}); err == nil || !strings.Contains(err.Error(), "superuser") {
		t.Fatalf("superuser: %v", err)
	}
	if s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: dsn, AllowPrivileged: true}}, Options{}); err != nil {
		t.Fatalf("superuser allowed explicitly: %v", err)
	} else {
		s.Close()
	}
	for _, q := range []string{"CREATE ROLE writer LOGIN", "GRANT SELECT, INSERT ON orders TO writer", "CREATE ROLE signaller LOGIN IN ROLE pg_signal_backend"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for role, want := range map[string]string{
		"writer":    "it may execute pg_cancel_backend(integer), pg_terminate_backend(integer,bigint)", // before the REVOKE
		"signaller": "member of pg_signal_backend",
	} {
		_, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: strings.Replace(dsn, "user=toolshed", "user="+role, 1)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("role %s: %v, want %q", role, err, want)
		}
	}
	reader := pgtest.ReadOnlyRole(t, dsn, "reader")
	_, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: strings.Replace(dsn, "user=toolshed", "user=writer", 1)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "it may write to or owns public.orders") {
		t.Errorf("writer: %v", err)
	}

	s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: reader + " default_query_exec_mode=simple_protocol"}}, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := filepath.Join(t.TempDir(), "pwned")
	var before string
	admin.QueryRow("SELECT md5(string_agg(o::text, ',' ORDER BY order_id)) FROM orders o").Scan(&before)

	// A victim backend of the same role.
	victim, err := sql.Open("pgx", reader)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	victim.SetMaxOpenConns(1)
	var pid int
	if err := victim.QueryRow("SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}

	for _, q := range []string{
		"SELECT 1; DELETE FROM orders",
		"SELECT 1 AS x$q$; COMMIT; DELETE FROM orders; SELECT 1 AS y$q$",
		`SELECT "pg_read_file"('/etc/passwd')`,
		`SELECT pg_catalog."pg_read_file"('/etc/passwd')`,
		"SELECT query_to_xml('SELECT pg_read_file(''/etc/passwd'')', true, true, '')",
		"SELECT query_to_xml($$DELETE FROM orders RETURNING 1$$, true, true, '')",
		"SELECT pg_ls_dir('.')",
		"SELECT lo_import('/etc/passwd')",
		"SELECT lo_export(1, '" + target + "')",
		"COPY orders TO '" + target + "'",
		"COPY (SELECT 1) TO PROGRAM 'touch " + target + "'",
		"SELECT pg_terminate_backend(" + itoa(pid) + ")",
		`SELECT "pg_terminate_backend"(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
		"SELECT pg_cancel_backend(" + itoa(pid) + ")",
		"WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d",
		"SELECT * INTO backup FROM orders",
		"CREATE TEMP TABLE t AS SELECT 1",
		"SET SESSION AUTHORIZATION toolshed",
		"SELECT set_config('default_transaction_read_only', 'off', false); DELETE FROM orders",
		"SELECT repeat('x', 300000000)",
		"SELECT pg_sleep(600)",
	} {
		start := time.Now()
		_, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: q})
		if err == nil {
			t.Errorf("%q ran", q)
		}
		// Stopped by the 1 s statement timeout, not run out: the bound is
		// for a machine ten times slower (the sleep would take 10 minutes).
		if took := time.Since(start); took > time.Minute {
			t.Errorf("%q took %s", q, took)
		}
	}
	// To PostgreSQL these are one statement each (a dollar-quoted and an
	// escaped string; a COMMIT of the empty read-only transaction): they
	// may run, and change nothing.
	for _, q := range []string{"SELECT $q$; DELETE FROM orders; SELECT $q$", "SELECT E'\\'; DELETE FROM orders; --'", "COMMIT"} {
		s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: q})
	}
	var after string
	admin.QueryRow("SELECT md5(string_agg(o::text, ',' ORDER BY order_id)) FROM orders o").Scan(&after)
	if after != before {
		t.Error("the orders changed")
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created: %v", err)
	}
	var pid2 int
	if err := victim.QueryRow("SELECT pg_backend_pid()").Scan(&pid2); err != nil || pid2 != pid {
		t.Errorf("the other backend was killed: %v (pid %d, now %d)", err, pid, pid2)
	}

	// One statement per call is the server's own rule (the extended
	// protocol), even though the DSN asked for the simple protocol.
	if _, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT 1; SELECT 2"}); err == nil || !strings.Contains(err.Error(), "one statement per call") {
		t.Errorf("two statements: %v", err)
	}
	// Nothing a query does to its session survives into the next one.
	s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT set_config('search_path', 'nowhere', false), set_config('statement_timeout', '0', false)"})
	s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT pg_advisory_lock(42)"})
	for i := 0; i < 4; i++ {
		r, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT current_setting('search_path'), current_setting('statement_timeout'), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')"})
		if err != nil || r.Rows[0][0] == "nowhere" || r.Rows[0][1] == "0" || r.Rows[0][2] != int64(0) {
			t.Fatalf("state carried over: %v %v", r, err)
		}
	}
	// A row larger than the host will hold fails on its size, and the
	// service goes on. Building 50 MB can take PostgreSQL over a second on
	// a loaded machine: this service's statement timeout is a minute, so
	// that the size check, not the timeout, is what the test sees.
	big, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: reader + " default_query_exec_mode=simple_protocol"}}, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	if _, err := big.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT repeat('x', 50000000)"}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 50 MB row: %v", err)
	}
	if r, err := big.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT count(*) FROM orders"}); err != nil || len(r.Rows) != 1 {
		t.Errorf("after: %v %v", r, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
