package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var dropsFlag = flag.Int("drops", 20, "plugin units TestReloadLatency drops (make bench-runtime: 100)")

// unit writes a plugin unit: module first or manifest first.
func unit(t *testing.T, dir, name, version string, moduleFirst bool) {
	t.Helper()
	module := []byte("\x00asm\x01\x00\x00\x00" + name + version)
	sum := sha256.Sum256(module)
	man := strings.Replace(manifestJSON(name, hex.EncodeToString(sum[:]), name+"Tool"), `"1.0.0"`, `"`+version+`"`, 1)
	writeModule := func() { write(t, dir, name+".wasm", string(module)) }
	writeManifest := func() { write(t, dir, name+".json", man) }
	if moduleFirst {
		writeModule()
		writeManifest()
	} else {
		writeManifest()
		writeModule()
	}
}

func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 60*time.Second { // a machine ten times slower meets it
		if cond() {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
	return 0
}

func has(l *Live, tool string) bool {
	_, ok := l.Snapshot().Tool(tool)
	return ok
}

func TestLiveReload(t *testing.T) {
	dir := t.TempDir()
	unit(t, dir, "alpha", "1.0.0", true)
	l, err := NewLive(dir, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := l.Snapshot()
	if !has(l, "alphaTool") || first.Generation != 1 {
		t.Fatalf("initial: %+v", first)
	}
	// A manifest whose module is not there yet is not admitted.
	write(t, dir, "beta.json", manifestJSON("beta", strings.Repeat("a", 64), "betaTool"))
	l.Reload()
	if has(l, "betaTool") || len(l.Snapshot().Errors) != 1 || !strings.Contains(l.Snapshot().Errors[0].Error(), "the plugin is left out until its module is there and matches") {
		t.Fatalf("incomplete unit: %v", l.Snapshot().Errors)
	}
	// A broken update keeps the old version serving.
	write(t, dir, "alpha.json", `{"name": "alpha", "version": "2.0.0", "tools": "broken"}`)
	s, _ := l.Reload()
	tool, ok := s.Tool("alphaTool")
	if !ok || tool.Plugin.Manifest.Version != "1.0.0" || !strings.Contains(fmt.Sprint(s.Errors), "version 1.0.0 stays live") {
		t.Fatalf("broken update: %v %v", ok, s.Errors)
	}
	// The old snapshot is untouched.
	if _, ok := first.Tool("alphaTool"); !ok || first.Generation != 1 {
		t.Fatal("the old snapshot changed")
	}
	// A good update replaces it; removing a unit removes it.
	unit(t, dir, "alpha", "2.0.0", true)
	s, _ = l.Reload()
	if tool, _ := s.Tool("alphaTool"); tool == nil || tool.Plugin.Manifest.Version != "2.0.0" {
		t.Fatalf("update: %v", s.Errors)
	}
	os.Remove(filepath.Join(dir, "alpha.json"))
	os.Remove(filepath.Join(dir, "beta.json"))
	if s, _ = l.Reload(); len(s.Tools) != 0 || s.Generation != 5 {
		t.Fatalf("remove: %d tools, generation %d", len(s.Tools), s.Generation)
	}
}

// TestWatch drops, updates, renames and removes units, and deletes and
// re-creates the directory, with a watcher running.
func TestWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	os.Mkdir(dir, 0o755)
	l, err := NewLive(dir, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Watch(ctx, WatchOptions{Debounce: 20 * time.Millisecond, Poll: 200 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)

	unit(t, dir, "gamma", "1.0.0", false) // manifest first: admitted once the module is in
	eventually(t, "gamma", func() bool { return has(l, "gammaTool") })
	write(t, dir, "gamma.json.swp", "editor junk")
	write(t, dir, ".#gamma.json", "editor junk")
	os.Rename(filepath.Join(dir, "gamma.json"), filepath.Join(dir, "gamma2.json"))
	eventually(t, "rename", func() bool {
		tl, ok := l.Snapshot().Tool("gammaTool")
		return ok && strings.HasSuffix(tl.Plugin.ManifestPath, "gamma2.json")
	})
	os.Remove(filepath.Join(dir, "gamma2.json"))
	eventually(t, "removal", func() bool { return !has(l, "gammaTool") })

	// Delete and re-create the directory.
	unit(t, dir, "delta", "1.0.0", true)
	eventually(t, "delta", func() bool { return has(l, "deltaTool") })
	os.RemoveAll(dir)
	time.Sleep(300 * time.Millisecond)
	if !has(l, "deltaTool") {
		t.Fatal("a deleted directory emptied the catalog")
	}
	os.Mkdir(dir, 0o755)
	unit(t, dir, "epsilon", "1.0.0", true)
	eventually(t, "re-created directory", func() bool { return has(l, "epsilonTool") && !has(l, "deltaTool") })
}

// TestReloadLatency measures, from the moment a unit's last file is in
// place to the moment search finds it, over many drops (docs/RUNTIME.md;
// -args -report prints the figure).
func TestReloadLatency(t *testing.T) {
	dir := t.TempDir()
	l, err := NewLive(dir, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Watch(ctx, WatchOptions{})
	time.Sleep(50 * time.Millisecond)
	drops := *dropsFlag
	if testing.Short() {
		drops = 5
	}
	var lat []time.Duration
	for i := 0; i < drops; i++ {
		name := fmt.Sprintf("drop%03d", i)
		unit(t, dir, name, "1.0.0", true)
		lat = append(lat, eventually(t, name, func() bool {
			r, _ := l.Snapshot().Search(name+"Tool", 1)
			return len(r.Hits) == 1 && r.Hits[0].Name == name+"Tool"
		}))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("drop-to-searchable over %d drops: p50 %s, max %s", drops, lat[len(lat)/2], lat[len(lat)-1])
	// The 300 ms target is the report's (make bench-runtime), not an
	// assertion: a loaded machine is slower, and a unit test asserts only
	// the outcome (every drop was found).
	if lat[len(lat)/2] > 300*time.Millisecond {
		t.Logf("p50 %s is over the 300 ms target", lat[len(lat)/2])
	}
}
