package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
)

// TestVerifiedModules: a module that passed is known while its file is
// unchanged, across processes (the file saved and read again), and not
// once its bytes change, even with the same size and modification time,
// nor through a symbolic link, nor for another pin; a load that knows a
// module admits it without reading it, and one that does not reads it.
func TestVerifiedModules(t *testing.T) {
	dir, module := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	snap, err := catalog.Load(dir, admission(nil))
	if err != nil || len(snap.Plugins) != 1 {
		t.Fatalf("%v %v", err, snap.Errors)
	}
	p := snap.Plugins[0]
	cache := filepath.Join(t.TempDir(), "verified.json")
	v := openVerified(cache)
	if v.Known(p) {
		t.Fatal("known before it was verified")
	}
	v.Remember(p)
	v.save()
	v = openVerified(cache) // another process
	if !v.Known(p) {
		t.Fatal("not known after it was verified and saved")
	}
	other := *p.Manifest
	other.SHA256 = "00" + p.Manifest.SHA256[2:]
	if v.Known(&catalog.Plugin{Manifest: &other, ModulePath: p.ModulePath}) {
		t.Fatal("known for another pin")
	}

	// The same size and modification time, other bytes: not known, and a
	// load with the cache reads it and leaves the plugin out.
	wasm := filepath.Join(dir, "textkit.wasm")
	st, _ := os.Stat(wasm)
	changed := append([]byte(nil), module...)
	changed[len(changed)-1] ^= 0xff
	time.Sleep(10 * time.Millisecond) // a change time the clock can tell apart
	os.WriteFile(wasm, changed, 0o644)
	os.Chtimes(wasm, st.ModTime(), st.ModTime())
	if v.Known(p) {
		t.Fatal("a rewritten module is known")
	}
	opts := admission(nil)
	opts.Verified = v
	if s, _ := catalog.Load(dir, opts); len(s.Plugins) != 0 {
		t.Fatal("a rewritten module was admitted")
	}

	// Back to the verified bytes, through a symbolic link: not known.
	real := filepath.Join(t.TempDir(), "textkit.wasm")
	os.WriteFile(real, module, 0o644)
	os.Remove(wasm)
	os.Symlink(real, wasm)
	v.Remember(p)
	if v.Known(p) {
		t.Fatal("a module behind a symbolic link is known")
	}
}
