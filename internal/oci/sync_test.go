package oci_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/oci"
	"github.com/toolshed/toolshed/internal/oci/ocitest"
)

func syncer(t *testing.T, dir string, sources ...string) *oci.Syncer {
	t.Helper()
	s, err := oci.NewSyncer(oci.SyncOptions{Dir: dir, Sources: sources, Client: client(t, oci.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSyncFollowsTag: a followed tag is pulled, then pulled again only
// when it moves; an outage, a tampered layer and a mismatched pin each
// leave the last good version in the folder and say why in the status.
func TestSyncFollowsTag(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	ref := reg.Host + "/plugins/textkit:stable"
	v1, v2 := ocitest.Textkit(t, "1.0.0"), ocitest.Textkit(t, "2.0.0")
	d1, _ := c.Push(ctx, ref, v1)
	dir := t.TempDir()
	s := syncer(t, dir, ref)
	if ok, why := s.Ready(); ok || !strings.Contains(why, "first registry sync") {
		t.Fatalf("ready before any sync: %v %q", ok, why)
	}
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Status()[0]
	if st.Digest != d1 || st.Plugin != "textkit" || st.Version != "1.0.0" || st.Updates != 1 || st.Error != "" {
		t.Fatalf("status %+v", st)
	}
	if ok, _ := s.Ready(); !ok {
		t.Fatal("not ready after a good sync")
	}
	before := reg.Requests()
	s.SyncOnce(ctx)
	if n := reg.Requests() - before; n != 1 || s.Status()[0].Updates != 1 {
		t.Fatalf("an unchanged tag cost %d requests (want one HEAD) and %d updates", n, s.Status()[0].Updates)
	}
	// The tag moves.
	d2, _ := c.Push(ctx, ref, v2)
	s.SyncOnce(ctx)
	if st := s.Status()[0]; st.Digest != d2 || st.Version != "2.0.0" || !ocitest.SameFile(filepath.Join(dir, "textkit.json"), v2.Manifest) {
		t.Fatalf("after the tag moved: %+v", st)
	}
	keeps := func(what string) {
		t.Helper()
		st := s.Status()[0]
		if st.Digest != d2 || !ocitest.SameFile(filepath.Join(dir, "textkit.json"), v2.Manifest) || !ocitest.SameFile(filepath.Join(dir, "textkit.wasm"), v2.Module) {
			t.Fatalf("%s: the last good version was not kept: %+v", what, st)
		}
		if st.Error == "" {
			t.Fatalf("%s: no error in the status", what)
		}
		if ok, _ := s.Ready(); !ok {
			t.Fatalf("%s: not ready, though the last good version serves", what)
		}
		t.Logf("%s: %s", what, st.Error)
	}
	reg.SetDown(true)
	if err := s.SyncOnce(ctx); err == nil {
		t.Fatal("no error with the registry down")
	}
	keeps("registry down")
	reg.SetDown(false)
	// A tampered v3.
	v3 := ocitest.Textkit(t, "3.0.0")
	c.Push(ctx, ref, v3)
	reg.Tamper("sha256:" + v3.ManifestSHA256())
	s.SyncOnce(ctx)
	keeps("tampered layer")
	// A v4 whose manifest pins another module, pushed by a careless
	// producer (Push itself refuses it).
	v4 := ocitest.Textkit(t, "4.0.0")
	v4.Module = append(v4.Module, 0)
	ocitest.PushUnchecked(t, reg.Host, "plugins/textkit", "stable", v4)
	s.SyncOnce(ctx)
	keeps("mismatched pin")
	if st := s.Status()[0]; st.Failures != 3 {
		t.Fatalf("failures %d, want 3", st.Failures)
	}
	// Back to good.
	d5, _ := c.Push(ctx, ref, ocitest.Textkit(t, "5.0.0"))
	s.SyncOnce(ctx)
	if st := s.Status()[0]; st.Digest != d5 || st.Error != "" {
		t.Fatalf("recovery: %+v", st)
	}
	// A new process on the same folder knows what it holds, registry or not.
	reg.SetDown(true)
	s2 := syncer(t, dir, ref)
	if ok, why := s2.Ready(); !ok || s2.Status()[0].Digest != d5 {
		t.Fatalf("restart: ready %v (%s), status %+v", ok, why, s2.Status()[0])
	}
}

// TestSyncPinnedAndOwnership: a digest is pulled once; an operator's own
// files are never overwritten; two sources may not hold one plugin.
func TestSyncPinnedAndOwnership(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	d, _ := c.Push(ctx, reg.Host+"/plugins/textkit:1", ocitest.Textkit(t, "1.0.0"))
	pinned := reg.Host + "/plugins/textkit@" + d
	dir := t.TempDir()
	s := syncer(t, dir, pinned)
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	before := reg.Requests()
	s.SyncOnce(ctx)
	if n := reg.Requests() - before; n != 0 {
		t.Fatalf("a pinned digest already held cost %d requests", n)
	}
	// An operator's own textkit.json.
	own := t.TempDir()
	os.WriteFile(filepath.Join(own, "textkit.json"), []byte(`{"mine":true}`), 0o644)
	err := syncer(t, own, pinned).SyncOnce(ctx)
	if !errors.Is(err, oci.ErrNotOwned) {
		t.Fatalf("operator's file: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(own, "textkit.json")); string(data) != `{"mine":true}` {
		t.Fatal("the operator's file was overwritten")
	}
	// Two sources, one plugin.
	c.Push(ctx, reg.Host+"/other/textkit:1", ocitest.Textkit(t, "1.0.1"))
	s3 := syncer(t, t.TempDir(), pinned, reg.Host+"/other/textkit:1")
	err = s3.SyncOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "holds already") || s3.Status()[0].Error != "" {
		t.Fatalf("two sources for one plugin: %v", err)
	}
	if ok, why := s3.Ready(); ok || !strings.Contains(why, "holds already") {
		t.Fatalf("ready with a source unsynced: %v %q", ok, why)
	}
	// Bad configuration.
	if _, err := oci.NewSyncer(oci.SyncOptions{Dir: dir, Client: c, Sources: []string{pinned, pinned}}); err == nil {
		t.Fatal("a source listed twice accepted")
	}
	if _, err := oci.NewSyncer(oci.SyncOptions{Dir: dir, Client: c, Sources: []string{"textkit"}}); err == nil {
		t.Fatal("a reference without a tag or digest accepted")
	}
}

// TestSyncConcurrentStatus: Status, Ready and Rounds while Run syncs
// (go test -race).
func TestSyncConcurrentStatus(t *testing.T) {
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	ref := reg.Host + "/plugins/textkit:stable"
	if _, err := c.Push(context.Background(), ref, ocitest.Textkit(t, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	s, err := oci.NewSyncer(oci.SyncOptions{Dir: t.TempDir(), Sources: []string{ref}, Interval: time.Millisecond, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for i := 0; s.Rounds() < 20; i++ {
		s.Status()
		s.Ready()
		if i%2 == 0 {
			c.Push(ctx, ref, ocitest.Textkit(t, "1.0."+strconv.Itoa(i%5)))
		}
	}
	cancel()
	<-done
	if ok, why := s.Ready(); !ok {
		t.Fatal(why)
	}
}

// TestSyncRefusesAnotherPlugin: a followed tag that comes to name another
// plugin is refused; the plugin it held stays.
func TestSyncRefusesAnotherPlugin(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	ref := reg.Host + "/plugins/textkit:stable"
	d1, _ := c.Push(ctx, ref, ocitest.Textkit(t, "1.0.0"))
	dir := t.TempDir()
	s := syncer(t, dir, ref)
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	other := ocitest.Textkit(t, "1.0.0")
	other.Manifest = bytes.Replace(bytes.Replace(other.Manifest, []byte(`"name": "textkit"`), []byte(`"name": "textkat"`), 1),
		[]byte(`"textkit.wasm"`), []byte(`"textkat.wasm"`), 1)
	p, err := oci.NewPlugin(other.Manifest, other.Module)
	if err != nil {
		t.Fatal(err)
	}
	c.Push(ctx, ref, p)
	err = s.SyncOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), `now holds plugin "textkat"`) || s.Status()[0].Digest != d1 {
		t.Fatalf("err %v, status %+v", err, s.Status()[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "textkat.json")); err == nil {
		t.Fatal("the other plugin was written")
	}
}

// TestSyncTimeout: a registry that accepts and never answers fails the
// round within SyncOptions.Timeout; the last good version stays.
func TestSyncTimeout(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t)
	c := client(t, oci.Options{})
	ref := reg.Host + "/plugins/textkit:stable"
	d, _ := c.Push(ctx, ref, ocitest.Textkit(t, "1.0.0"))
	s, err := oci.NewSyncer(oci.SyncOptions{Dir: t.TempDir(), Sources: []string{ref}, Client: c, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	reg.SetHang(true)
	defer reg.SetHang(false)
	start := time.Now()
	err = s.SyncOnce(ctx)
	took := time.Since(start)
	// A hanging registry never answers: the deadline's error is the
	// outcome (the time is reported on failure only).
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("hanging registry: %v after %s", err, took)
	}
	if st := s.Status()[0]; st.Digest != d || st.Error == "" {
		t.Fatalf("status %+v", st)
	}
	t.Logf("hanging registry: round failed after %s: %v", took.Round(time.Millisecond), err)
}
