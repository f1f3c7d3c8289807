package sqlcap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/sdk/abi"
)

// slowQueryDoesNotStarve: tenant a starts four queries that run until
// stopped, filling what would be every slot of the database; tenant b's
// query must then be answered while a's still run (before the change it
// waited for one of them to end). No wall-clock assertion: the outcome is
// the order of events, with deadlines far past what a slow machine needs.
func slowQueryDoesNotStarve(t *testing.T, s *Service, db, slow, quick string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	aDone := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.QueryTenantSQL(ctx, "a", db, abi.SQLRequest{SQL: slow})
			mu.Lock()
			aDone++
			mu.Unlock()
		}()
	}
	// a's queries hold their slots once a's share is full.
	deadline := time.Now().Add(time.Minute)
	for s.tenants[db].busy()["a"] < s.opts.TenantSlots {
		if time.Now().After(deadline) {
			t.Fatal("tenant a's queries never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r, err := s.QueryTenantSQL(context.Background(), "b", db, abi.SQLRequest{SQL: quick})
	mu.Lock()
	done := aDone
	mu.Unlock()
	if err != nil || len(r.Rows) != 1 {
		t.Fatalf("tenant b's query: %v %v", r, err)
	}
	if done != 0 {
		t.Fatalf("tenant b was answered only after %d of a's slow queries ended", done)
	}
	if busy := s.tenants[db].busy()["a"]; busy > s.opts.TenantSlots {
		t.Fatalf("tenant a holds %d slots; its share is %d", busy, s.opts.TenantSlots)
	}
	stop()
	wg.Wait()
}

// TestTenantSlotsSQLite: with real SQLite, one tenant's four slow queries
// do not make another tenant's query wait.
func TestTenantSlotsSQLite(t *testing.T) {
	s, _ := demo(t, Options{Timeout: 10 * time.Minute})
	slowQueryDoesNotStarve(t, s, "default",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
		"SELECT count(*) FROM orders")
}

// TestTenantSlotsPostgres: the same against a real PostgreSQL server.
func TestTenantSlotsPostgres(t *testing.T) {
	dsn, _ := pgDemo(t)
	s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: pgtest.ReadOnlyRole(t, dsn, "reader")}}, Options{Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	slowQueryDoesNotStarve(t, s, "pg", "SELECT pg_sleep(600)", "SELECT count(*) FROM orders")
}

// TestTenantSlotsShare: a tenant past its share waits, then fails with a
// message that says why; the tenant "" (no keys) is not bounded.
func TestTenantSlotsShare(t *testing.T) {
	s, _ := demo(t, Options{Timeout: 2 * time.Second, MaxConcurrent: 4})
	if s.opts.TenantSlots != 2 {
		t.Fatalf("default share of 4 slots: %d", s.opts.TenantSlots)
	}
	ts := s.tenants["default"]
	ctx := context.Background()
	for range 2 {
		if err := ts.acquire(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.QueryTenantSQL(ctx, "a", "default", abi.SQLRequest{SQL: "SELECT 1"})
	if err == nil || !strings.Contains(err.Error(), "its share of the 4 slots") {
		t.Fatalf("a third query of a tenant holding 2 of 4: %v", err)
	}
	if _, err := s.QuerySQL(ctx, "default", abi.SQLRequest{SQL: "SELECT 1"}); err != nil {
		t.Fatalf("no tenant: %v", err)
	}
	ts.release("a")
	if _, err := s.QueryTenantSQL(ctx, "a", "default", abi.SQLRequest{SQL: "SELECT 1"}); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

// victimQuery is the statement of the report: model-written SQL carries
// user data as literals.
const victimQuery = `SELECT pg_sleep(3), 'victim-card-4111111111111111' AS card`

// readActivity runs, as tenant b, what a plugin's executeSql would to
// read pg_stat_activity, while tenant a's victimQuery runs; it returns
// every query text b saw.
func readActivity(t *testing.T, s *Service) string {
	t.Helper()
	ctx := context.Background()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := s.QueryTenantSQL(ctx, "a", "pg", abi.SQLRequest{SQL: victimQuery})
		done <- err
	}()
	<-started
	var seen strings.Builder
	for reads := 0; ; reads++ {
		r, err := s.QueryTenantSQL(ctx, "b", "pg", abi.SQLRequest{SQL: "SELECT coalesce(query, '') FROM pg_stat_activity"})
		if err != nil {
			t.Fatalf("reading pg_stat_activity: %v", err)
		}
		for _, row := range r.Rows {
			fmt.Fprintln(&seen, row[0])
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the victim's query: %v", err)
			}
			if reads == 0 {
				t.Fatal("the victim's query ended before b read once")
			}
			return seen.String()
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestPgStatActivityHidden: key b's SQL reading pg_stat_activity never
// shows key a's query text, with the role docs/SQL.md sets up. The
// control (a role with track_activities on, allowed only explicitly)
// shows the probe sees what it must not.
func TestPgStatActivityHidden(t *testing.T) {
	dsn, admin := pgDemo(t)
	reader := pgtest.ReadOnlyRole(t, dsn, "reader")
	s, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: reader}}, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if seen := readActivity(t, s); strings.Contains(seen, "victim-card") {
		t.Fatalf("tenant b read tenant a's query from pg_stat_activity:\n%s", seen)
	}

	// The role before docs/SQL.md's ALTER ROLE: Open refuses it, naming
	// the fix; allowed explicitly, it leaks (the probe works).
	if _, err := admin.Exec(`CREATE ROLE leaky LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO leaky`); err != nil {
		t.Fatal(err)
	}
	leaky := strings.Replace(dsn, "user=toolshed", "user=leaky", 1)
	_, err = Open([]Database{{Name: "pg", Driver: "postgres", DSN: leaky}}, Options{})
	if err == nil || !strings.Contains(err.Error(), `ALTER ROLE "leaky" SET track_activities = off`) {
		t.Fatalf("a role whose queries show in pg_stat_activity: %v", err)
	}
	l, err := Open([]Database{{Name: "pg", Driver: "postgres", DSN: leaky, AllowPrivileged: true}}, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if seen := readActivity(t, l); !strings.Contains(seen, "victim-card-4111111111111111") {
		t.Fatalf("control: with track_activities on, b should see a's query; saw:\n%s", seen)
	}
	// A role that reads every backend's text whatever the setting.
	if _, err := admin.Exec(`CREATE ROLE stats LOGIN IN ROLE pg_read_all_stats; ALTER ROLE stats SET track_activities = off`); err != nil {
		t.Fatal(err)
	}
	_, err = Open([]Database{{Name: "pg", Driver: "postgres", DSN: strings.Replace(dsn, "user=toolshed", "user=stats", 1)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "member of pg_read_all_stats") {
		t.Fatalf("a member of pg_read_all_stats: %v", err)
	}
	// A plugin cannot turn it back on.
	_, err = s.QueryTenantSQL(context.Background(), "b", "pg", abi.SQLRequest{SQL: "SELECT set_config('track_activities', 'on', false)"})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("set_config(track_activities): %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}
