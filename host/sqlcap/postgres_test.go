package sqlcap

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/sdk/abi"
)

// TestPostgres runs the capability against a real PostgreSQL server: the
// demo data, read-only enforcement past the gate, the statement timeout.
func TestPostgres(t *testing.T) {
	dsn, admin := pgDemo(t)
	ctx := context.Background()
	s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: pgtest.ReadOnlyRole(t, dsn, "reader")}}, Options{Timeout: 5 * time.Second}) // the slow query below runs for minutes: a machine ten times slower still tells them apart
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT substr(order_date, 1, 7) AS month, ROUND(SUM(total)::numeric, 2) AS sales FROM orders GROUP BY 1 ORDER BY 1"})
	if err != nil || len(r.Rows) != 12 || r.Columns[1] != "sales" {
		t.Fatalf("monthly sales: %v %v", r, err)
	}
	// Same data as the SQLite demo.
	lite, _ := demo(t, Options{})
	q := abi.SQLRequest{SQL: "SELECT COUNT(*), MAX(name) FROM customers"}
	a, _ := s.QuerySQL(ctx, "pg", q)
	b, _ := lite.QuerySQL(ctx, "default", q)
	if fmt.Sprint(a.Rows) != fmt.Sprint(b.Rows) {
		t.Errorf("PostgreSQL %v vs SQLite %v", a.Rows, b.Rows)
	}
	r, err = s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT name FROM customers WHERE city = $1 ORDER BY customer_id", Params: []any{"北京"}, MaxRows: 2})
	if err != nil || len(r.Rows) != 2 || !r.Truncated {
		t.Fatalf("params: %v %v", r, err)
	}
	for q, want := range map[string]string{
		"DELETE FROM orders": "only SELECT",
		"SELECT count(*) FROM generate_series(1, 1000000000)": "longer than",
		"SELECT pg_read_file('/etc/passwd')":                  "permission denied",
	} {
		if _, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: q}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
		}
	}
	// The transaction is read-only whatever the role may do: a write
	// hidden in a function call (nextval changes a sequence) fails even
	// for a superuser allowed explicitly.
	if _, err := admin.Exec("CREATE SEQUENCE toolshed_probe"); err != nil {
		t.Fatal(err)
	}
	su, err := Open([]Database{{Name: "su", Driver: "postgres", DSN: dsn, AllowPrivileged: true}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	if _, err := su.QuerySQL(ctx, "su", abi.SQLRequest{SQL: "SELECT nextval('toolshed_probe')"}); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("nextval in the read-only transaction: %v", err)
	}
}

// pgDemo starts a throwaway server holding the demo data and returns its
// superuser DSN and a connection through it.
func pgDemo(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := pgtest.Start(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if err := LoadDemoPostgres(context.Background(), admin); err != nil {
		t.Fatal(err)
	}
	return dsn, admin
}
