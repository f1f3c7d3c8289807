package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

func textkitUnit(t testing.TB, dir, version string, module []byte) {
	t.Helper()
	man, err := os.ReadFile("../../plugin-manifests/textkit.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(module)
	s := strings.Replace(string(man), `"version": "0.1.0"`, `"version": "`+version+`"`, 1)
	var m map[string]any
	json.Unmarshal([]byte(s), &m)
	s = strings.Replace(s, m["sha256"].(string), hex.EncodeToString(sum[:]), 1)
	os.WriteFile(filepath.Join(dir, "textkit.wasm"), module, 0o644)
	os.WriteFile(filepath.Join(dir, "textkit.json"), []byte(s), 0o644)
}

// TestUpdatesUnderLoad: 50 sessions call tools of one plugin while it is
// updated, removed and added again: no call fails, and each session sees
// the version its snapshot holds.
func TestUpdatesUnderLoad(t *testing.T) {
	module, err := os.ReadFile(wasmbuild.Build(t, "../../plugins/textkit"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	textkitUnit(t, dir, "1.0.0", module)
	h, _ := newHost(t, nil)
	live, err := catalog.NewLive(dir, catalog.LiveOptions{OnChange: func(_, s *catalog.Snapshot) { h.Sync(s) }})
	if err != nil {
		t.Fatal(err)
	}
	var calls, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := live.Snapshot() // a request keeps the snapshot it started with
				tool, ok := snap.Tool("slugify")
				if !ok {
					time.Sleep(time.Millisecond) // removed in this generation
					continue
				}
				s := h.NewSession()
				for i := 0; i < 3; i++ {
					res, err := s.Call(context.Background(), tool, json.RawMessage(`{"text":"A b"}`))
					calls.Add(1)
					if err != nil || res.IsError || res.Content != "a-b" {
						failures.Add(1)
						t.Errorf("version %s: %+v %v", tool.Plugin.Manifest.Version, res, err)
					}
				}
				s.Close(context.Background())
			}
		}()
	}
	for i := 1; i <= 6; i++ {
		time.Sleep(150 * time.Millisecond)
		switch i {
		case 3:
			os.Remove(filepath.Join(dir, "textkit.json"))
		default:
			textkitUnit(t, dir, fmt.Sprintf("1.0.%d", i), module)
		}
		live.Reload()
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failures.Load() > 0 || calls.Load() < 100 {
		t.Fatalf("%d of %d calls failed", failures.Load(), calls.Load())
	}
	t.Logf("%d calls across %d reloads, none failed", calls.Load(), live.Reloads())
}

var soakCycles = flag.Int("cycles", 200, "reload cycles of TestReloadMemoryFlat (make bench-runtime: 1000)")

// TestReloadMemoryFlat: a thousand reloads with version bumps leave the
// host holding only current versions, and the heap flat.
func TestReloadMemoryFlat(t *testing.T) {
	module, err := os.ReadFile(wasmbuild.Build(t, "../../plugins/textkit"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	textkitUnit(t, dir, "1.0.0", module)
	h, _ := newHost(t, &wasm.Options{RetireGrace: -1, PoolSize: -1})
	live, err := catalog.NewLive(dir, catalog.LiveOptions{OnChange: func(_, s *catalog.Snapshot) { h.Sync(s) }})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	cycle := func(i int) {
		textkitUnit(t, dir, fmt.Sprintf("1.%d.0", i), module)
		live.Reload()
		if i%100 == 0 { // now and then a version is used, so it is compiled and then released
			tool, _ := live.Snapshot().Tool("slugify")
			s := h.NewSession()
			if res, err := s.Call(context.Background(), tool, json.RawMessage(`{"text":"x"}`)); err != nil || res.IsError {
				t.Fatalf("cycle %d: %+v %v", i, res, err)
			}
			s.Close(context.Background())
		}
	}
	cycles := *soakCycles
	if raceEnabled || testing.Short() {
		cycles = min(cycles, 60) // the race detector makes each cycle ten times slower
	}
	for i := 1; i <= 100; i++ { // warm up
		cycle(i)
	}
	before := heap()
	for i := 101; i <= 100+cycles; i++ {
		cycle(i)
	}
	after := heap()
	t.Logf("heap after 100 reloads %.1f MiB, after %d more: %.1f MiB; plugin versions held: %d", float64(before)/(1<<20), cycles, float64(after)/(1<<20), h.Plugins())
	if h.Plugins() > 1 {
		t.Errorf("the host holds %d plugin versions", h.Plugins())
	}
	if after > before+8<<20 {
		t.Errorf("heap grew from %d to %d bytes over 1,000 reloads", before, after)
	}
}
