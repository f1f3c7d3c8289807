package sqlcap

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/sdk/abi"
)

// startPostgres starts a throwaway PostgreSQL server in a temporary
// directory (Debian's postgresql package: initdb, pg_ctl), listening on a
// Unix socket only, and returns a DSN. It skips the test, saying why,
// where no server can be started.
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := ""
	for _, dir := range append([]string{""}, globDirs("/usr/lib/postgresql/*/bin")...) {
		p := filepath.Join(dir, "initdb")
		if dir == "" {
			if lp, err := exec.LookPath("initdb"); err == nil {
				p = lp
			} else {
				continue
			}
		}
		if _, err := os.Stat(p); err == nil {
			bin = filepath.Dir(p)
			break
		}
	}
	if bin == "" {
		t.Skip("SKIP PostgreSQL integration: no initdb found (install Debian's postgresql package)")
	}
	dir, err := os.MkdirTemp("", "toolshed-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(args[0], args[1:]...)
		if os.Geteuid() == 0 { // the server refuses to run as root
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
		return cmd.CombinedOutput()
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("SKIP PostgreSQL integration: running as root and there is no postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Skipf("SKIP PostgreSQL integration: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "toolshed", "-E", "UTF8", "--locale=C"); err != nil {
		t.Skipf("SKIP PostgreSQL integration: initdb failed: %v\n%s", err, out)
	}
	port := freePort(t)
	opts := fmt.Sprintf("-k %s -p %d -c listen_addresses='' -c fsync=off", dir, port)
	if out, err := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-w", "-t", "60", "-l", filepath.Join(dir, "log"), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Skipf("SKIP PostgreSQL integration: the server did not start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() { run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop") })
	return fmt.Sprintf("host=%s port=%d user=toolshed dbname=postgres sslmode=disable", dir, port)
}

func globDirs(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestPostgres runs the capability against a real PostgreSQL server: the
// demo data, read-only enforcement past the gate, the statement timeout.
func TestPostgres(t *testing.T) {
	dsn := startPostgres(t)
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
