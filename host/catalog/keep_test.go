package catalog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// versionModule is an ABI v1 module whose one tool answers its version.
func versionModule(t *testing.T, v string) []byte {
	content := `{\"content\":\"` + v + `\"}`
	return wasmbuild.WAT(t, []byte(fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (data (i32.const 0) "%s")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64) (i64.const %d)))`, content, len(`{"content":"`+v+`"}`))))
}

func versionManifest(v string, module []byte) string {
	sum := sha256.Sum256(module)
	return `{"name": "hello", "version": "` + v + `", "abi_version": 1, "description": "Says its version.",
  "wasm": "hello.wasm", "sha256": "` + hex.EncodeToString(sum[:]) + `",
  "tools": [{"name": "hello", "description": "Answers the plugin's version.", "parameters": {"type": "object"}}]}`
}

// TestUpdateModuleFirst (issue 25): a plugin updated in the wrong order —
// its .wasm replaced, then its manifest — with calls running all along,
// each on a host that compiles the module afresh (as a plugin no call has
// needed yet would): no call fails, each runs the version its snapshot
// lists, and the half-written state says so until the manifest follows.
func TestUpdateModuleFirst(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := versionModule(t, "1.0.0"), versionModule(t, "2.0.0")
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello.wasm", v1)
	write("hello.json", []byte(versionManifest("1.0.0", v1)))
	keep := filepath.Join(t.TempDir(), "kept")
	l, err := catalog.NewLive(dir, catalog.LiveOptions{Search: &catalog.Options{KeepModules: keep}})
	if err != nil {
		t.Fatal(err)
	}

	var calls, fails atomic.Int64
	var firstFail atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := l.Snapshot()
				tool, ok := snap.Tool("hello")
				if !ok {
					fails.Add(1)
					firstFail.CompareAndSwap(nil, "the tool is not listed")
					continue
				}
				h, err := wasm.New(&wasm.Options{PoolSize: -1, CacheDir: "off"})
				if err != nil {
					t.Error(err)
					return
				}
				s := h.NewSession()
				res, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
				s.Close(context.Background())
				h.Close(context.Background())
				calls.Add(1)
				if want := tool.Plugin.Manifest.Version; err != nil || res.Content != want {
					fails.Add(1)
					firstFail.CompareAndSwap(nil, fmt.Sprintf("listed %s, got %q, %v", want, res.Content, err))
				}
			}
		}()
	}
	// runFor waits until the callers have made n more calls (a deadline a
	// machine ten times slower meets: the calls take milliseconds).
	runFor := func(n int64, what string) {
		t.Helper()
		target := calls.Load() + n
		deadline := time.Now().Add(2 * time.Minute)
		for calls.Load() < target {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d calls made in 2 minutes", what, calls.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	reload := func() *catalog.Snapshot {
		t.Helper()
		s, err := l.Reload()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	runFor(10, "version 1")

	// The module first: version 1 stays listed and served, and says an
	// update is half written.
	write("hello.wasm", v2)
	s := reload()
	p := s.Plugins[0]
	if p.Manifest.Version != "1.0.0" || !strings.Contains(p.Pending, "the manifest pins") || !strings.Contains(p.Pending, "calls run the admitted module") {
		t.Fatalf("after the module alone: version %s, pending %q", p.Manifest.Version, p.Pending)
	}
	runFor(20, "half written")

	// Then the manifest: version 2, nothing pending.
	write("hello.json", []byte(versionManifest("2.0.0", v2)))
	s = reload()
	if p := s.Plugins[0]; p.Manifest.Version != "2.0.0" || p.Pending != "" || len(s.Errors) > 0 {
		t.Fatalf("after the manifest: version %s, pending %q, errors %v", p.Manifest.Version, p.Pending, s.Errors)
	}
	runFor(10, "version 2")

	// The kept copies are named by content; the module file itself gone,
	// version 2 still serves.
	os.Remove(filepath.Join(dir, "hello.wasm"))
	s = reload()
	if p := s.Plugins[0]; p.Manifest.Version != "2.0.0" || !strings.Contains(p.Pending, "is gone") {
		t.Fatalf("after the module went: version %s, pending %q", p.Manifest.Version, p.Pending)
	}
	runFor(10, "module gone")
	close(stop)
	wg.Wait()
	t.Logf("%d calls, %d failed", calls.Load(), fails.Load())
	if fails.Load() != 0 {
		t.Fatalf("%d of %d calls failed; first: %v", fails.Load(), calls.Load(), firstFail.Load())
	}
	kept, _ := filepath.Glob(filepath.Join(keep, "*.wasm"))
	if len(kept) != 2 {
		t.Errorf("kept modules: %v, want the two versions", kept)
	}
}

// TestKeptCopyChecked: a kept copy that was changed is not run; the module
// file serves if it still matches the pin.
func TestKeptCopyChecked(t *testing.T) {
	dir := t.TempDir()
	v1 := versionModule(t, "1.0.0")
	os.WriteFile(filepath.Join(dir, "hello.wasm"), v1, 0o644)
	os.WriteFile(filepath.Join(dir, "hello.json"), []byte(versionManifest("1.0.0", v1)), 0o644)
	keep := filepath.Join(t.TempDir(), "kept")
	s, err := catalog.Load(dir, &catalog.Options{RequireModules: true, KeepModules: keep})
	if err != nil || len(s.Plugins) != 1 {
		t.Fatal(err, s.Errors)
	}
	kept, _ := filepath.Glob(filepath.Join(keep, "*.wasm"))
	if len(kept) != 1 {
		t.Fatalf("kept: %v", kept)
	}
	os.WriteFile(kept[0], versionModule(t, "6.6.6"), 0o644)
	code, err := s.Plugins[0].ReadModule()
	if err != nil || string(code) != string(v1) {
		t.Fatalf("a changed kept copy: %v", err)
	}
	os.Remove(filepath.Join(dir, "hello.wasm"))
	if _, err := s.Plugins[0].ReadModule(); err == nil {
		t.Fatal("neither copy matches, and a module was returned")
	}
}
