package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

// TestServeUpdateModuleFirst (issue 25): serve's catalog, a plugin no call
// has compiled yet updated module first — its .wasm replaced, then its
// manifest — with calls running from then on: no call fails, each gets the
// version /v1/plugins listed, and until the manifest follows /v1/plugins
// and the log say the update is half written.
func TestServeUpdateModuleFirst(t *testing.T) {
	e := newHostileEnv(t, "")
	v1 := wat(t, abiWAT("", `(memory (export "memory") 1)`, okResult, ""))
	v2 := wat(t, abiWAT("", `(memory (export "memory") 1)`, `(i64.const 2199023255568)`, // 512<<32 | 16
		`(data (i32.const 512) "{\"content\":\"v2\"}")`))
	want := map[string]string{"1.0.0": "ok", "2.0.0": "v2"}
	e.plugin("hello.json", "hello", v1, nil, nil, "hello")
	var logs bytes.Buffer
	lw := &lockedWriter{w: &logs}
	opts := admission(nil)
	opts.KeepModules = filepath.Join(e.root, "kept")
	live, err := catalog.NewLive(e.plugins, catalog.LiveOptions{Search: opts,
		Logger: slog.New(slog.NewTextHandler(lw, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := wasm.New(&wasm.Options{CacheDir: "off", PoolSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	srv := httptest.NewServer((&server{live: live, runtime: rt}).routes())
	defer srv.Close()

	type view struct {
		Plugins []struct{ Name, Version, Pending, SHA256 string }
	}
	plugins := func() view {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/plugins")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v view
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Plugins) != 1 {
			t.Fatalf("/v1/plugins: %v %+v", err, v)
		}
		return v
	}
	// The module first, rewritten over the old file, before any call
	// compiled version 1.
	if err := os.WriteFile(filepath.Join(e.plugins, "hello.wasm"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	live.Reload()
	if p := plugins().Plugins[0]; p.Version != "1.0.0" || !strings.Contains(p.Pending, "the manifest pins") {
		t.Fatalf("half written: %+v", p)
	}
	lw.mu.Lock()
	logged := strings.Contains(logs.String(), "plugin update half written")
	lw.mu.Unlock()
	if !logged {
		t.Errorf("the log does not say the update is half written:\n%s", logs.String())
	}

	var calls, fails atomic.Int64
	var firstFail atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				tool, ok := live.Snapshot().Tool("hello")
				s := rt.NewSession()
				res, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
				s.Close(context.Background())
				calls.Add(1)
				if !ok || err != nil || res.Content != want[tool.Plugin.Manifest.Version] {
					fails.Add(1)
					firstFail.CompareAndSwap(nil, res.Content+" "+errString(err))
				}
			}
		})
	}
	waitCalls := func(n int64) {
		t.Helper()
		target := calls.Load() + n
		for deadline := time.Now().Add(2 * time.Minute); calls.Load() < target; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls in 2 minutes", calls.Load())
			}
		}
	}
	waitCalls(20)

	// Then the manifest, version 2.
	e.plugin("hello.json", "hello", v2, nil, nil, "hello")
	man, _ := os.ReadFile(filepath.Join(e.plugins, "hello.json"))
	man = bytes.Replace(man, []byte(`"version": "1.0.0"`), []byte(`"version": "2.0.0"`), 1)
	if err := os.WriteFile(filepath.Join(e.plugins, "hello.json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	live.Reload()
	if p := plugins().Plugins[0]; p.Version != "2.0.0" || p.Pending != "" {
		t.Fatalf("after the manifest: %+v", p)
	}
	waitCalls(20)
	close(stop)
	wg.Wait()
	t.Logf("%d calls, %d failed", calls.Load(), fails.Load())
	if fails.Load() != 0 {
		t.Fatalf("%d of %d calls failed; first: %v", fails.Load(), calls.Load(), firstFail.Load())
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
