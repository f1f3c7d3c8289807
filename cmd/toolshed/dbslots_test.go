package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/internal/config"
)

// TestPerKeyDBSlots: server.per_key.db_slots reaches the databases the
// agent opens (each key's share of a database's query slots); unset, the
// share is half of them; negative is refused.
func TestPerKeyDBSlots(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")
	if err := sqlcap.EnsureDemo(db); err != nil {
		t.Fatal(err)
	}
	grants, _ := json.Marshal(map[string]any{"databases": map[string]any{"dw": map[string]any{"driver": "sqlite", "dsn": db}}})
	cfgFile := filepath.Join(dir, "toolshed.yaml")
	if err := os.WriteFile(cfgFile, []byte("log:\n  level: error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gp := filepath.Join(dir, "grants.json")
	if err := os.WriteFile(gp, grants, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set  string
		want int
	}{{"", 2}, {"1", 1}, {"3", 3}, {"9", 4}} {
		flags := map[string]string{"plugins.dir": dir, "plugins.grants": gp}
		if c.set != "" {
			flags["server.per_key.db_slots"] = c.set
		}
		l, err := config.Load(config.Source{File: cfgFile, Flags: flags})
		if err != nil {
			t.Fatalf("db_slots %q: %v", c.set, err)
		}
		a, err := newAgent(&l.Config, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, false, nil)
		if err != nil {
			t.Fatalf("db_slots %q: %v", c.set, err)
		}
		if _, share := a.op.sql.TenantSlots(); share != c.want {
			t.Errorf("db_slots %q: each key's share is %d slots, want %d", c.set, share, c.want)
		}
		a.op.close()
	}
	if _, err := config.Load(config.Source{File: cfgFile, Flags: map[string]string{"server.per_key.db_slots": "-1"}}); err == nil {
		t.Error("a negative server.per_key.db_slots was accepted")
	}
}
