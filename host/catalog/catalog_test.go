package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

func manifestJSON(name, sha string, tools ...string) string {
	var ts []string
	for _, t := range tools {
		ts = append(ts, fmt.Sprintf(`{"name": %q, "description": "Tool %s does things with widgets.", "parameters": {"type": "object", "properties": {"x": {"type": "string", "description": "the x"}}}}`, t, t))
	}
	return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "abi_version": 1, "wasm": "%s.wasm", "sha256": %q, "tools": [%s]}`,
		name, name, sha, strings.Join(ts, ","))
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadReportsBadManifestsAndKeepsGoodOnes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.json", manifestJSON("alpha", zeros, "alphaOne", "alphaTwo"))
	write(t, dir, "b.json", `{"name": "beta", "version": "1.0.0", "abi_version": 1, "wasm": "b.wasm", "sha256": "`+zeros+`", "tools": [], "colour": "red"}`)
	write(t, dir, "c.json", manifestJSON("gamma", zeros, "gammaOne"))
	write(t, dir, "d.json", manifestJSON("delta", zeros, "alpha_one"))  // clashes with alphaOne
	write(t, dir, "e.json", manifestJSON("alpha", zeros, "epsilonOne")) // plugin name taken
	write(t, dir, "f.json", `{"name": "broken"`)
	write(t, dir, ".hidden.json", "not even json")
	write(t, dir, "notes.txt", "not a manifest")
	write(t, dir, "g.json~", "editor backup")

	s, err := Load(dir, &Options{Generation: 7})
	if err != nil {
		t.Fatal(err)
	}
	if s.Generation != 7 {
		t.Errorf("generation = %d", s.Generation)
	}
	var got []string
	for _, tl := range s.Tools {
		got = append(got, tl.Name())
	}
	if strings.Join(got, ",") != "alphaOne,alphaTwo,gammaOne" {
		t.Errorf("tools = %v", got)
	}
	wantErr := map[string]string{
		"b.json": "colour: unknown field",
		"d.json": `tools[0].name: tool "alpha_one" clashes with tool "alphaOne" of plugin "alpha"`,
		"e.json": `name: plugin "alpha" is already loaded from`,
		"f.json": "invalid JSON",
	}
	if len(s.Errors) != len(wantErr) {
		t.Errorf("errors: %v", s.Errors)
	}
	for _, e := range s.Errors {
		base := filepath.Base(e.File)
		want, ok := wantErr[base]
		if !ok || !strings.Contains(e.Error(), want) || !strings.Contains(e.Error(), e.File) {
			t.Errorf("%s: error %q, want it to name the file and contain %q", base, e.Error(), want)
		}
	}
	if _, ok := s.Tool("ALPHA_two"); !ok {
		t.Error("Tool lookup does not fold names")
	}
}

func TestLoadMissingDir(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v", err)
	}
}

// recordFS records every file opened.
type recordFS struct {
	fs.FS
	mu     sync.Mutex
	opened []string
}

func (r *recordFS) Open(name string) (fs.File, error) {
	r.mu.Lock()
	r.opened = append(r.opened, name)
	r.mu.Unlock()
	return r.FS.Open(name)
}

// TestNoModuleByteReadToBuildSnapshot proves the catalog indexes manifests
// without reading modules: no .wasm file is opened, a module that is a FIFO
// (reading it would block forever) does not stop Load, and a missing module
// is reported only when it is needed.
func TestNoModuleByteReadToBuildSnapshot(t *testing.T) {
	mem := &recordFS{FS: fstest.MapFS{
		"alpha.json": {Data: []byte(manifestJSON("alpha", zeros, "alphaOne"))},
		"alpha.wasm": {Data: []byte("\x00asm\x01\x00\x00\x00")},
	}}
	s, err := LoadFS(mem, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range mem.opened {
		if strings.HasSuffix(name, ".wasm") {
			t.Fatalf("Load opened %s", name)
		}
	}
	if len(s.Tools) != 1 {
		t.Fatalf("tools = %d", len(s.Tools))
	}

	dir := t.TempDir()
	write(t, dir, "fifo.json", manifestJSON("fifo", zeros, "fifoTool"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o644); err != nil {
		t.Skipf("no FIFO on this system: %v", err)
	}
	write(t, dir, "gone.json", manifestJSON("gone", zeros, "goneTool"))
	done := make(chan *Snapshot, 1)
	go func() {
		s, err := Load(dir, nil)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	select {
	case s = <-done:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("Load blocked: it opened the FIFO module")
	}
	r, err := s.Search("fifoTool widgets", 5)
	if err != nil || len(r.Hits) == 0 || r.Hits[0].Name != "fifoTool" {
		t.Fatalf("search: %v %v", r, err)
	}
	gone, _ := s.Tool("goneTool")
	if _, err := gone.Plugin.ReadModule(); err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), "gone.json") {
		t.Fatalf("missing module: err = %v", err)
	}
}

func TestReadModuleChecksSHA256(t *testing.T) {
	dir := t.TempDir()
	module := []byte("\x00asm\x01\x00\x00\x00")
	sum := sha256.Sum256(module)
	write(t, dir, "good.json", manifestJSON("good", hex.EncodeToString(sum[:]), "goodTool"))
	write(t, dir, "good.wasm", string(module))
	write(t, dir, "bad.json", manifestJSON("bad", hex.EncodeToString(sum[:]), "badTool"))
	write(t, dir, "bad.wasm", string(module)+"tampered")
	if err := os.Mkdir(filepath.Join(dir, "dir.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "dir.json", manifestJSON("dir", zeros, "dirTool"))
	s, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := func(n string) *Tool { tl, _ := s.Tool(n); return tl }
	if data, err := tool("goodTool").Plugin.ReadModule(); err != nil || string(data) != string(module) {
		t.Fatalf("good: %v", err)
	}
	if _, err := tool("badTool").Plugin.ReadModule(); err == nil || !strings.Contains(err.Error(), "the manifest pins") {
		t.Fatalf("tampered: err = %v", err)
	}
	if _, err := tool("dirTool").Plugin.ReadModule(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: err = %v", err)
	}
}

func TestSchemaParams(t *testing.T) {
	got := SchemaParams([]byte(`{"type":"object","properties":{
		"z":{"type":"string","description":"last"},
		"a":{"type":"object","description":"first","properties":{"inner":{"type":"integer","description":"deep"}}},
		"u":{"type":"string","enum":["metric","imperial"]},
		"list":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"item name"}}}}}}`))
	var s []string
	for _, p := range got {
		s = append(s, p.Name+"="+p.Description)
	}
	want := "a=first|a.inner=deep|list=|list.name=item name|u=(metric, imperial)|z=last"
	if strings.Join(s, "|") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(s, "|"), want)
	}
	if SchemaParams([]byte(`not json`)) != nil {
		t.Fatal("bad JSON should give no params")
	}
}

// TestSnapshotConcurrentReaders hammers one snapshot (run with -race).
func TestSnapshotConcurrentReaders(t *testing.T) {
	s, err := Load("../../plugin-manifests", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := s.Search("查表结构", 3); err != nil {
					t.Error(err)
					return
				}
				if _, ok := s.Tool("executeSql"); !ok {
					t.Error("executeSql missing")
					return
				}
			}
		}()
	}
	wg.Wait()
}
