package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
)

func scrape(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// TestTenancySeries: the memory budget and a key's share of it, and the
// query slots a key holds, labelled by the key's tenant id prefix.
func TestTenancySeries(t *testing.T) {
	rt, err := wasm.New(&wasm.Options{CacheDir: "off", MemoryBudget: 1 << 30, TenantMemory: 256 << 20, MemoryWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := sqlcap.EnsureDemo(path); err != nil {
		t.Fatal(err)
	}
	svc, err := sqlcap.Open([]sqlcap.Database{{Name: "default", Driver: "sqlite", DSN: path}}, sqlcap.Options{Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	store := artifact.New(artifact.Options{})
	if _, err := store.PutFor("fedcba9876543210fedc", t.TempDir(), "chart.svg", "image/svg+xml", []byte("<svg/>")); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Runtime: rt, SQL: svc, Artifacts: store})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.QueryTenantSQL(ctx, "0123456789abcdef0123", "default", abi.SQLRequest{SQL: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"})
	}()
	busy := `toolshed_sql_key_slots_busy{database="default",key="0123456789ab"} 1`
	deadline := time.Now().Add(time.Minute)
	for body := scrape(m); !strings.Contains(body, busy); body = scrape(m) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in\n%s", busy, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	body := scrape(m)
	for _, want := range []string{
		"toolshed_plugin_memory_budget_bytes 1.073741824e+09",
		"toolshed_plugin_memory_key_share_bytes 2.68435456e+08",
		"toolshed_plugin_memory_bytes 0",
		"toolshed_plugin_memory_refusals_total 0",
		"toolshed_plugin_instances_reclaimed_total 0",
		"toolshed_plugin_memory_wait_limit_seconds 2",
		"toolshed_plugin_memory_waiting 0",
		"toolshed_plugin_memory_waits_started_total 0",
		`toolshed_plugin_memory_waits_total{outcome="timeout"} 0`,
		"toolshed_plugin_memory_wait_seconds_count 0",
		"toolshed_sql_key_slots_share 2",
		"toolshed_artifacts_bytes 6",
		`toolshed_artifacts_key_bytes{key="fedcba987654"} 6`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	if strings.Contains(body, "toolshed_sql_key_slots_busy{") {
		t.Errorf("a slot still shown busy after the query ended:\n%s", body)
	}
}
