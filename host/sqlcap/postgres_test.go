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
	dsn := pgtest.Start(t)
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := LoadDemoPostgres(ctx, admin); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: dsn}}, Options{Timeout: 500 * time.Millisecond})
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
		"SELECT pg_read_file('/etc/passwd')":                  "pg_read_file is not allowed",
	} {
		if _, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: q}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
		}
	}
	// Past the gate the transaction is read-only: a write hidden in a
	// function call (nextval changes a sequence) fails.
	if _, err := admin.Exec("CREATE SEQUENCE toolshed_probe"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.QuerySQL(ctx, "pg", abi.SQLRequest{SQL: "SELECT nextval('toolshed_probe')"}); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("nextval in the read-only transaction: %v", err)
	}
}
