package sessionstore

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/redistest"
)

func open(t *testing.T, url string, log *slog.Logger) *Redis {
	t.Helper()
	r, err := Open(url, &Options{Logger: log, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis://127.0.0.1:6379/0", ""},
		{"rediss://user:secret@cache.example:6380/2", ""},
		{"http://127.0.0.1:6379", `scheme "http"`},
		{"redis:///0", "no host"},
		{"redis://:hunter2@127.0.0.1:6379/notanumber", "invalid database number"},
		{"127.0.0.1:6379", "redis://"},
	} {
		err := Validate(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows the password: %v", tc.url, err)
		}
	}
	if got := Redact("redis://:hunter2@127.0.0.1:6379/0"); strings.Contains(got, "hunter2") {
		t.Errorf("Redact kept the password: %s", got)
	}
}

// TestRecord: a record saved is what Touch returns, until Release; an
// unknown id is nil, not an error.
func TestRecord(t *testing.T) {
	srv := redistest.Start(t)
	r := open(t, srv.URL, nil)
	ctx := context.Background()
	if rec, err := r.Touch(ctx, "nope", "", time.Minute); rec != nil || err != nil {
		t.Fatalf("unknown session: %v, %v", rec, err)
	}
	want := &Record{Tenant: "k1", Protocol: "2025-06-18", Initialize: []byte(`{"clientInfo":{"name":"c"}}`), Discovered: []string{"a", "b"}}
	if err := r.Save(ctx, "s1", want, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := r.Touch(ctx, "s1", "k1", time.Minute)
	if err != nil || got == nil {
		t.Fatalf("touch: %v, %v", got, err)
	}
	if got.Tenant != want.Tenant || got.Protocol != want.Protocol || !bytes.Equal(got.Initialize, want.Initialize) || fmt.Sprint(got.Discovered) != fmt.Sprint(want.Discovered) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if err := r.Release(ctx, "s1", "k1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Touch(ctx, "s1", "k1", time.Minute); rec == nil || !rec.Ended || err != nil {
		t.Fatalf("released session: %+v, %v", rec, err)
	}
	// A replica that still holds it cannot save it back.
	if err := r.Save(ctx, "s1", want, time.Minute); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Touch(ctx, "s1", "k1", time.Minute); rec == nil || !rec.Ended || err != nil {
		t.Fatalf("released session saved again: %+v, %v", rec, err)
	}
}

// TestCorruptRecord: a record that is not JSON is an error (the caller
// treats it as the store's failure), not a panic or an empty session; the
// store keeps no session id in the clear.
func TestCorruptRecord(t *testing.T) {
	srv := redistest.Start(t)
	r := open(t, srv.URL, nil)
	ctx := context.Background()
	if err := r.Save(ctx, "SECRETSESSIONID", &Record{Tenant: "k", Initialize: []byte(`{}`)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Admit(ctx, "SECRETSESSIONID", "k", Limits{Max: 9, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	keys, _ := r.Client().Keys(ctx, "*").Result()
	for _, k := range keys {
		members, _ := r.Client().ZRange(ctx, k, 0, -1).Result()
		if strings.Contains(k, "SECRETSESSIONID") || strings.Contains(fmt.Sprint(members), "SECRETSESSIONID") {
			t.Fatalf("the store holds the session id in the clear: %s %v", k, members)
		}
	}
	if err := r.Client().Set(ctx, r.recordKey("bad"), "{{{", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Touch(ctx, "bad", "", time.Minute); err == nil || rec != nil {
		t.Fatalf("a corrupt record: %v %v", rec, err)
	}
}

// TestRecordExpires: a record no request touches is gone after its TTL.
func TestRecordExpires(t *testing.T) {
	srv := redistest.Start(t)
	r := open(t, srv.URL, nil)
	ctx := context.Background()
	if err := r.Save(ctx, "s1", &Record{}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Each look is 100 ms apart, longer than the TTL: a look cannot keep it.
	until(t, "the record outlived its TTL", func() bool {
		rec, err := r.Touch(ctx, "s1", "", 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return rec == nil
	})
}

// TestAdmitLimits: the fleet's bound and a tenant's share hold, whatever
// the caller; Release frees a slot; slots of sessions nobody touches
// expire, so a crashed replica's heal.
func TestAdmitLimits(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL, nil), open(t, srv.URL, nil) // two replicas
	ctx := context.Background()
	lim := Limits{Max: 3, PerTenant: 2, TTL: time.Hour}
	must := func(s *Redis, sid, tenant string, want Admission) {
		t.Helper()
		got, err := s.Admit(ctx, sid, tenant, lim)
		if err != nil || got != want {
			t.Fatalf("admit %s of %s: %v, %v; want %v", sid, tenant, got, err, want)
		}
	}
	must(a, "k1-1", "k1", Admitted)
	must(b, "k1-2", "k1", Admitted)
	must(a, "k1-3", "k1", AtShare) // the third of a key limited to 2, on either replica
	must(b, "k1-3", "k1", AtShare)
	must(b, "k2-1", "k2", Admitted)
	must(a, "k3-1", "k3", Full) // 3 alive in the fleet
	if err := b.Release(ctx, "k1-1", "k1", time.Minute); err != nil {
		t.Fatal(err)
	}
	must(a, "k1-3", "k1", Admitted)

	// Slots with a short TTL that nobody touches free themselves.
	short := Limits{Max: 100, PerTenant: 1, TTL: 50 * time.Millisecond}
	if got, err := a.Admit(ctx, "x-1", "x", short); err != nil || got != Admitted {
		t.Fatalf("admit: %v %v", got, err)
	}
	until(t, "an expired slot was never freed", func() bool {
		got, err := b.Admit(ctx, "x-2", "x", short)
		if err != nil {
			t.Fatal(err)
		}
		return got == Admitted
	})
}

// TestSaveHeals: a store that lost everything (restarted empty) gets a
// session and its slots back from the replica that saves it.
func TestSaveHeals(t *testing.T) {
	srv := redistest.Start(t)
	r := open(t, srv.URL, nil)
	ctx := context.Background()
	lim := Limits{Max: 10, PerTenant: 1, TTL: time.Hour}
	if got, err := r.Admit(ctx, "s1", "k", lim); err != nil || got != Admitted {
		t.Fatalf("admit: %v %v", got, err)
	}
	if err := r.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(ctx, "s1", &Record{Tenant: "k", Initialize: []byte(`{}`)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Admit(ctx, "s2", "k", lim); err != nil || got != AtShare {
		t.Fatalf("the saved session's slot was not counted: %v %v", got, err)
	}
}

// TestSaveMerges: two replicas saving one session's discoveries at once
// keep both's.
func TestSaveMerges(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL, nil), open(t, srv.URL, nil)
	ctx := context.Background()
	base := Record{Tenant: "k", Initialize: []byte(`{}`), Discovered: []string{"x"}}
	if err := a.Save(ctx, "s", &base, time.Minute); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, st := range []*Redis{a, b, a, b} {
		wg.Go(func() {
			rec := base
			rec.Discovered = []string{"x", fmt.Sprint("t", i)}
			if err := st.Save(ctx, "s", &rec, time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := a.Touch(ctx, "s", "k", time.Minute)
	if err != nil || got == nil {
		t.Fatal(got, err)
	}
	if len(got.Discovered) != 5 || got.Discovered[0] != "x" {
		t.Fatalf("discovered %v, want x then t0..t3 in some order", got.Discovered)
	}
}

// TestAdmitConcurrent: twenty admissions of one tenant at once, through
// two clients, take exactly its share.
func TestAdmitConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	stores := []*Redis{open(t, srv.URL, nil), open(t, srv.URL, nil)}
	ctx := context.Background()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := stores[i%2].Admit(ctx, fmt.Sprint("s", i), "k", Limits{Max: 100, PerTenant: 3, TTL: time.Hour})
			if err != nil {
				t.Error(err)
			}
			if got == Admitted {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 3 {
		t.Fatalf("%d admitted, want 3", n)
	}
}

// TestOutage: with the server gone every operation errs (the caller falls
// back), once logged; when it returns the store works again and says so.
func TestOutage(t *testing.T) {
	srv := redistest.Start(t)
	var log bytes.Buffer
	var mu sync.Mutex
	r := open(t, srv.URL, slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil)))
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for range 3 {
		if _, err := r.Admit(ctx, "s", "", Limits{Max: 1, TTL: time.Minute}); err == nil {
			t.Fatal("admit with the store down: no error")
		}
	}
	srv.Restart()
	until(t, "the store never came back", func() bool { return r.Ping(ctx) == nil })
	if got, err := r.Admit(ctx, "s", "", Limits{Max: 1, TTL: time.Minute}); err != nil || got != Admitted {
		t.Fatalf("admit after the outage: %v %v", got, err)
	}
	mu.Lock()
	out := log.String()
	mu.Unlock()
	if strings.Count(out, "session store unreachable") != 1 || strings.Count(out, "reachable again") != 1 {
		t.Fatalf("want one line going down and one coming back:\n%s", out)
	}
}

// TestBackoff: a store that hangs fails the operation that waited on it,
// then the next ones at once (no round trip) while backing off, and
// answers again once it does.
func TestBackoff(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(srv.URL, &Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if _, err := r.Touch(ctx, "s", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	if _, err := r.Touch(ctx, "s", "", time.Minute); err == nil || errors.Is(err, errBackingOff) {
		t.Fatalf("the first operation on a hung store: %v, want its timeout", err)
	}
	if _, err := r.Touch(ctx, "s", "", time.Minute); !errors.Is(err, errBackingOff) {
		t.Fatalf("the next: %v, want an at-once failure while backing off", err)
	}
	srv.Resume()
	until(t, "the store answering after it resumed", func() bool {
		_, err := r.Touch(ctx, "s", "", time.Minute)
		return err == nil
	})
}

// TestPassword: a server with requirepass is reached with the URL's
// password and refused without it.
func TestPassword(t *testing.T) {
	srv := redistest.StartWithPassword(t, "s3cret-pass")
	ctx := context.Background()
	if err := open(t, srv.URL, nil).Ping(ctx); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	err := open(t, "redis://"+srv.Addr+"/0", nil).Ping(ctx)
	if err == nil {
		t.Fatal("no password: the server answered")
	}
}

// until waits for ok, looking every 100 ms, and fails with msg after 30 s.
func until(t *testing.T, msg string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestTLS: rediss:// to a redis-server that speaks TLS only. With its
// authority among RootCAs the record round-trips; without it the
// certificate is refused (the system's authorities never signed it); a
// plain redis:// URL to the TLS port does not get through either.
func TestTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CA) {
		t.Fatal("the test authority's PEM")
	}
	ctx := context.Background()
	r, err := Open(srv.URL, &Options{Timeout: 5 * time.Second, RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("rediss:// with the authority: %v", err)
	}
	want := &Record{Tenant: "k1", Protocol: "2025-06-18", Initialize: []byte(`{}`), Discovered: []string{"a"}, LogLevel: "warning"}
	if err := r.Save(ctx, "s1", want, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Touch(ctx, "s1", "k1", time.Minute); err != nil || got == nil || got.LogLevel != "warning" || len(got.Discovered) != 1 {
		t.Fatalf("over TLS: %+v, %v", got, err)
	}

	untrusted, err := Open(srv.URL, &Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if err := untrusted.Ping(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("rediss:// without the authority: %v, want a certificate error", err)
	}

	plain, err := Open(strings.Replace(srv.URL, "rediss://", "redis://", 1), &Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Ping(ctx); err == nil {
		t.Fatal("plain redis:// to a TLS-only port answered")
	}
}
