package sqlcap

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/sdk/abi"
)

func demo(t testing.TB, opts Options) (*Service, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := EnsureDemo(path); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]Database{{Name: "default", Driver: "sqlite", DSN: path}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestDemoDatabase(t *testing.T) {
	s, path := demo(t, Options{})
	ctx := context.Background()
	count := func(q string) float64 {
		t.Helper()
		r, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q})
		if err != nil {
			t.Fatal(err)
		}
		switch v := r.Rows[0][0].(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		}
		t.Fatalf("%q: %T", q, r.Rows[0][0])
		return 0
	}
	if n := count("SELECT COUNT(*) FROM orders"); n < 2000 {
		t.Errorf("%v orders", n)
	}
	if n := count("SELECT COUNT(*) FROM order_items"); n < 3000 {
		t.Errorf("%v order items", n)
	}
	if n := count("SELECT COUNT(DISTINCT substr(order_date, 1, 7)) FROM orders"); n != 12 {
		t.Errorf("%v months", n)
	}
	if n := count("SELECT COUNT(*) FROM customers WHERE name GLOB '*[^ -~]*'"); n == 0 {
		t.Error("no Chinese names")
	}
	// Totals agree with the items.
	if n := count(`SELECT COUNT(*) FROM orders o WHERE abs(o.total - (SELECT SUM(quantity*unit_price) FROM order_items i WHERE i.order_id = o.order_id)) > 0.01`); n != 0 {
		t.Errorf("%v orders whose total differs from their items", n)
	}
	// Deterministic: a second build is the same data.
	other := filepath.Join(t.TempDir(), "again.db")
	EnsureDemo(other)
	s2, _ := Open([]Database{{Name: "x", Driver: "sqlite", DSN: other}}, Options{})
	defer s2.Close()
	r1, _ := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT SUM(total), MAX(name) FROM orders JOIN customers USING (customer_id)"})
	r2, _ := s2.QuerySQL(ctx, "x", abi.SQLRequest{SQL: "SELECT SUM(total), MAX(name) FROM orders JOIN customers USING (customer_id)"})
	if r1.Rows[0][0] != r2.Rows[0][0] || r1.Rows[0][1] != r2.Rows[0][1] {
		t.Errorf("demo data differs between builds: %v vs %v", r1.Rows, r2.Rows)
	}
	// An existing file is left alone.
	st, _ := os.Stat(path)
	EnsureDemo(path)
	if st2, _ := os.Stat(path); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("EnsureDemo rewrote an existing database")
	}
}

func TestReadOnlyEnforced(t *testing.T) {
	s, path := demo(t, Options{MaxRows: 10, MaxBytes: 2000, Timeout: 3 * time.Second}) // the endless query below is what it stops; the others take milliseconds
	ctx := context.Background()
	r, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT * FROM orders ORDER BY order_id"})
	if err != nil || len(r.Rows) != 10 || !r.Truncated || r.Columns[0] != "order_id" {
		t.Fatalf("row cap: %v %v", r, err)
	}
	r, err = s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT name, city FROM customers WHERE city = ?", Params: []any{"北京"}, MaxRows: 3})
	if err != nil || len(r.Rows) != 3 || r.Rows[0][1] != "北京" {
		t.Fatalf("params: %v %v", r, err)
	}
	r, err = s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT group_concat(name, ',') FROM customers"})
	if err != nil || len(r.Rows) != 0 || !r.Truncated {
		t.Fatalf("byte cap: %v %v", r, err)
	}
	_, err = s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c"})
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("timeout: %v", err)
	}
	for _, q := range []string{"DELETE FROM orders", "SELECT 1; DROP TABLE orders", "ATTACH DATABASE 'x.db' AS x"} {
		if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: q}); err == nil {
			t.Errorf("%q ran", q)
		}
	}
	if _, err := s.QuerySQL(ctx, "nope", abi.SQLRequest{SQL: "SELECT 1"}); err == nil || !strings.Contains(err.Error(), `no database "nope"`) {
		t.Errorf("unknown database: %v", err)
	}
	raw, _ := sql.Open("sqlite", "file:"+path)
	defer raw.Close()
	var n int
	raw.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n)
	if n == 0 {
		t.Error("orders were deleted")
	}
}
