package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/procmem"
)

// The hostile tests of the plugin folder and identity (issue 13, classes
// 11 to 14). Each asserts containment: the load ends (within a deadline a
// machine ten times slower meets: a hang never ends), the
// good plugins stay, the bad file is refused with a clear error.

// unitWith writes a complete unit (module + manifest) under file names of
// the caller's choice, declaring plugin name and tools.
func unitWith(t *testing.T, dir, file, name string, tools ...string) {
	t.Helper()
	module := []byte("\x00asm\x01\x00\x00\x00" + file + name)
	sum := sha256.Sum256(module)
	base := strings.TrimSuffix(file, ".json")
	write(t, dir, base+".wasm", string(module))
	man := manifestJSON(name, hex.EncodeToString(sum[:]), tools...)
	man = strings.Replace(man, `"wasm": "`+name+`.wasm"`, `"wasm": "`+base+`.wasm"`, 1)
	write(t, dir, file, man)
}

// errorFor returns the load error of file in s, or "".
func errorFor(s *Snapshot, file string) string {
	for _, e := range s.Errors {
		if filepath.Base(e.File) == file {
			return e.Error()
		}
	}
	return ""
}

func loadWithin(t *testing.T, bound time.Duration, load func() (*Snapshot, error)) *Snapshot {
	t.Helper()
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		s, err := load()
		done <- result{s, err}
	}()
	if raceEnabled {
		bound *= 5
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Logf("load took %s", time.Since(start))
		return r.s
	case <-time.After(bound):
		t.Fatalf("the load did not finish within %s", bound)
		return nil
	}
}

// TestImpostorRefused: a dropped-in aaa-sql.json declaring "sql" evicts
// nothing, at the first load and during hot reload (class 12).
func TestImpostorRefused(t *testing.T) {
	dir := t.TempDir()
	unitWith(t, dir, "sql.json", "sql", "executeSql")
	unitWith(t, dir, "aaa-sql.json", "sql", "executeEvil")
	unitWith(t, dir, "zzz.json", "sql", "executeWorse")
	check := func(s *Snapshot, impostors ...string) {
		t.Helper()
		tl, ok := s.Tool("executeSql")
		if !ok || filepath.Base(tl.Plugin.ManifestPath) != "sql.json" || len(s.Plugins) != 1 {
			t.Fatalf("the real plugin is not the one loaded: %v %v", ok, s.Errors)
		}
		for _, f := range impostors {
			msg := errorFor(s, f)
			if !strings.Contains(msg, `plugin "sql" is already loaded from `+filepath.Join(dir, "sql.json")) {
				t.Errorf("%s: %q", f, msg)
			}
		}
		if _, ok := s.Tool("executeEvil"); ok {
			t.Error("the impostor's tool is in the catalog")
		}
	}
	// First load: sql.json is named for the plugin, so it wins.
	l, err := NewLive(dir, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(l.Snapshot(), "aaa-sql.json", "zzz.json")

	// Hot reload: the real plugin runs; an impostor dropped in later loses.
	dir2 := t.TempDir()
	unitWith(t, dir2, "sql.json", "sql", "executeSql")
	l2, err := NewLive(dir2, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir = dir2
	unitWith(t, dir2, "aaa-sql.json", "sql", "executeEvil")
	s, _ := l2.Reload()
	check(s, "aaa-sql.json")
	// The impostor changing its bytes (a new version) changes nothing.
	unitWith(t, dir2, "aaa-sql.json", "sql", "executeEvil", "another")
	s, _ = l2.Reload()
	check(s, "aaa-sql.json")
}

// TestNameStaysWithHolder: across reloads the file that held a name keeps
// it, even against a NAME.json dropped in later; at a first load NAME.json
// wins; otherwise the first file by name.
func TestNameStaysWithHolder(t *testing.T) {
	dir := t.TempDir()
	unitWith(t, dir, "b-old.json", "foo", "fooTool")
	l, err := NewLive(dir, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unitWith(t, dir, "foo.json", "foo", "fooNew")
	unitWith(t, dir, "a-first.json", "bar", "barTool")
	unitWith(t, dir, "c-second.json", "bar", "barOther")
	s, _ := l.Reload()
	if tl, ok := s.Tool("fooTool"); !ok || !strings.HasSuffix(tl.Plugin.ManifestPath, "b-old.json") {
		t.Fatalf("the holder lost foo: %v", s.Errors)
	}
	if !strings.Contains(errorFor(s, "foo.json"), "already loaded from") || !strings.Contains(errorFor(s, "c-second.json"), "a-first.json") {
		t.Fatalf("errors: %v", s.Errors)
	}
	// The holder leaves: the name goes to foo.json at the next reload.
	os.Remove(filepath.Join(dir, "b-old.json"))
	s, _ = l.Reload()
	if tl, ok := s.Tool("fooNew"); !ok || !strings.HasSuffix(tl.Plugin.ManifestPath, "foo.json") {
		t.Fatalf("foo.json did not get foo: %v", s.Errors)
	}
	// A fresh load of the same folder: foo.json wins over b-old.json.
	unitWith(t, dir, "b-old.json", "foo", "fooTool")
	s, err = Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Tool("fooNew"); !ok || !strings.Contains(errorFor(s, "b-old.json"), "foo.json") {
		t.Fatalf("first load: %v", s.Errors)
	}
}

// TestToolNameClashes: a plugin's tool may not clash with a reserved name
// (the host's, or the embedder's Options.Reserved) or another plugin's tool,
// by case and separators or by look-alike characters (class 13).
func TestToolNameClashes(t *testing.T) {
	dir := t.TempDir()
	unitWith(t, dir, "sql.json", "sql", "executeSql")
	unitWith(t, dir, "a.json", "pa", "current_time")
	unitWith(t, dir, "b.json", "pb", "todo-write")
	unitWith(t, dir, "c.json", "pc", "tooI_search")
	unitWith(t, dir, "d.json", "pd", "executeSqI")
	unitWith(t, dir, "e.json", "pe", "execute_SQL")
	unitWith(t, dir, "f.json", "pf", "deployApp")
	unitWith(t, dir, "g.json", "pg", "depIoyApp")
	s, err := Load(dir, &Options{Reserved: []string{"deploy_app"}})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"a.json": `"current_time" is reserved by the host`,
		"b.json": `differs from "todo_write" only in case`,
		"c.json": `it looks like "tool_search"`,
		"d.json": `tool "executeSqI" clashes with tool "executeSql" of plugin "sql"`,
		"e.json": `tool "execute_SQL" clashes with tool "executeSql" of plugin "sql"`,
		"f.json": `tool "deployApp" clashes with "deploy_app", a tool this host reserves`,
		"g.json": `tool "depIoyApp" clashes with "deploy_app", a tool this host reserves`,
	} {
		if msg := errorFor(s, file); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want %q", file, msg, want)
		}
	}
	if len(s.Plugins) != 1 || len(s.Tools) != 1 {
		t.Fatalf("admitted %d plugins, %d tools", len(s.Plugins), len(s.Tools))
	}
}

// hostileManifest returns a valid manifest of at most size bytes built to
// cost as much as the format allows: as many tools as fit, each with the
// largest description, and either the largest schemas (shape "schema") or
// the most keywords and examples (shape "text"), all of distinct words.
func hostileManifest(name string, size int, shape string) []byte {
	text := func(n, seed int) string {
		var b strings.Builder
		for i := 0; b.Len() < n-12; i++ {
			b.WriteString("w" + strconv.Itoa(seed*7919+i) + "q ")
		}
		return strings.TrimSpace(b.String())
	}
	var tools []string
	total, schemaBytes := 300, 0
	for ti := 0; ti < manifest.MaxTools; ti++ {
		var t strings.Builder
		fmt.Fprintf(&t, `{"name": "%sT%d", "description": %q`, name, ti, text(manifest.MaxDescriptionBytes, ti))
		switch {
		case shape == "schema" && schemaBytes < manifest.MaxSchemaBytesTotal-1000:
			var props []string
			n := 100
			for i := 0; n < min(manifest.MaxSchemaBytes, manifest.MaxSchemaBytesTotal-schemaBytes)-100; i++ {
				p := fmt.Sprintf(`"p%d": {"type": "string", "description": "d", "minLength": 1}`, i)
				n += len(p) + 2
				props = append(props, p)
			}
			params := fmt.Sprintf(`{"type": "object", "properties": {%s}}`, strings.Join(props, ", "))
			schemaBytes += len(params)
			fmt.Fprintf(&t, `, "parameters": %s`, params)
		default:
			var kws, exs []string
			for i := 0; i < manifest.MaxKeywords; i++ {
				kws = append(kws, text(manifest.MaxKeywordBytes, ti*1000+i))
			}
			for i := 0; i < manifest.MaxExamples; i++ {
				exs = append(exs, text(manifest.MaxExampleBytes, ti*5000+i))
			}
			k, _ := json.Marshal(kws)
			e, _ := json.Marshal(exs)
			fmt.Fprintf(&t, `, "keywords": %s, "examples": %s`, k, e)
		}
		t.WriteString("}")
		if total+t.Len() > size {
			break
		}
		total += t.Len() + 2
		tools = append(tools, t.String())
	}
	return []byte(fmt.Sprintf(`{"name": %q, "version": "1.0.0", "abi_version": 1, "wasm": "%s.wasm", "sha256": %q, "tools": [%s]}`,
		name, name, zeros, strings.Join(tools, ",\n")))
}

// peakRSS resets the process's peak resident set (Linux: clear_refs 5) and
// returns a function giving the peak since, in bytes (-1 elsewhere).
func peakRSS() func() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		return func() int64 { return -1 }
	}
	return func() int64 {
		if b, ok := procmem.Self("VmHWM"); ok {
			return b
		}
		return -1
	}
}

// TestReloadCostBounded: 100 manifests of the largest size, built to cost
// the most, dropped beside a plugin already loaded: the load ends within a
// time and memory bound, reads no more than MaxCatalogBytes (the plugin
// loaded before keeps its place), and a reload where nothing changed
// decodes nothing and builds no index again (class 14).
func TestReloadCostBounded(t *testing.T) {
	for _, shape := range []string{"schema", "text"} {
		t.Run(shape, func(t *testing.T) {
			dir := t.TempDir()
			unitWith(t, dir, "zz-good.json", "good", "goodTool")
			s0, err := Load(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var bytes int
			for i := 0; i < 100; i++ {
				m := hostileManifest(fmt.Sprintf("h%03d", i), manifest.MaxFileBytes, shape)
				bytes += len(m)
				write(t, dir, fmt.Sprintf("h%03d.json", i), string(m))
			}
			peak := peakRSS()
			start := time.Now()
			s1 := loadWithin(t, 60*time.Second, func() (*Snapshot, error) { return Load(dir, &Options{Previous: s0}) })
			first := time.Since(start)
			rss := peak()
			if _, ok := s1.Tool("goodTool"); !ok {
				t.Fatalf("the plugin loaded before lost its place: %v", errorFor(s1, "zz-good.json"))
			}
			refused := 0
			for _, e := range s1.Errors {
				if !strings.Contains(e.Error(), "the most one catalog reads") {
					t.Fatalf("unexpected error: %v", e)
				}
				refused++
			}
			if refused == 0 || len(s1.Plugins)+refused != 101 {
				t.Fatalf("%d plugins, %d refused", len(s1.Plugins), refused)
			}
			start = time.Now()
			s2, err := Load(dir, &Options{Previous: s1})
			again := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("100 manifests, %d MB: %d admitted (%d tools), %d refused; load %s, peak RSS %d MB; unchanged reload %s",
				bytes>>20, len(s1.Plugins), len(s1.Tools), refused, first, rss>>20, again)
			if s2.Index != s1.Index || !samePlugins(s1.Plugins, s2.Plugins) {
				t.Error("an unchanged reload decoded the manifests or built the index again")
			}
			// The times are logged (measured figures: docs/MANIFEST.md); the
			// outcome is asserted: the load ended (loadWithin's deadline is
			// for a machine ten times slower), memory stayed bounded and the
			// unchanged reload reused the snapshot (above).
			// The race detector's shadow memory, and a collector that
			// lags on a busy machine, double it there.
			if limit := map[bool]uint64{false: 400 << 20, true: 800 << 20}[raceEnabled]; uint64(rss) > limit {
				t.Errorf("peak RSS %d MB, over %d MB", rss>>20, limit>>20)
			}
		})
	}
}
