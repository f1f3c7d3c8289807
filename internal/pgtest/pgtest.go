// Package pgtest starts a throwaway PostgreSQL server for tests.
package pgtest

import (
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

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// Start starts a throwaway PostgreSQL server in a temporary
// directory (Debian's postgresql package: initdb, pg_ctl), listening on a
// Unix socket only, and returns a DSN. It skips the test, saying why,
// where no server can be started.
func Start(t testing.TB) string {
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

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ReadOnlyRole creates, through the superuser DSN that Start returned, a
// login role holding only SELECT on the tables of schema public, with
// pg_terminate_backend and pg_cancel_backend revoked from PUBLIC and
// track_activities off (as docs/SQL.md advises), and returns a DSN that connects as it. Call it
// after the tables exist.
func ReadOnlyRole(t testing.TB, adminDSN, role string) string {
	t.Helper()
	db, err := sql.Open("pgx", adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN`, role),
		fmt.Sprintf(`GRANT USAGE ON SCHEMA public TO %s`, role),
		fmt.Sprintf(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s`, role),
		fmt.Sprintf(`ALTER ROLE %s SET track_activities = off`, role),
		`REVOKE EXECUTE ON FUNCTION pg_terminate_backend(integer, bigint), pg_cancel_backend(integer) FROM PUBLIC`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return strings.Replace(adminDSN, "user=toolshed", "user="+role, 1)
}
