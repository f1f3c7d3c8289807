package artifact_test

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/internal/redistest"
	"github.com/toolshed/toolshed/internal/sessionstore"
)

// TestShared: two replicas' stores, each with its own directory, sharing
// a real redis-server: what A stores B reads, to the byte and with its
// type, and serves from a file of its own; an artifact over the size cap,
// and one written while the store is down, stay A's alone (B: not found,
// A: served); an id never stored is not found.
func TestShared(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *artifact.Store {
		r, err := sessionstore.Open(srv.URL, &sessionstore.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		s := artifact.New(artifact.Options{})
		s.Share(r, t.TempDir(), 1<<10)
		return s
	}
	a, b := open(), open()
	dirA := t.TempDir()
	data := []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)
	art, err := a.PutFor("k", dirA, "chart.svg", "image/svg+xml", data)
	if err != nil {
		t.Fatal(err)
	}
	got, read, err := b.Read(art.ID)
	if err != nil || !bytes.Equal(read, data) || got.ContentType != "image/svg+xml" || got.Name != "chart.svg" {
		t.Fatalf("B reads A's artifact: %+v %q %v", got, read, err)
	}
	if onDisk, err := os.ReadFile(got.Path); err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("B's copy at %s: %q %v", got.Path, onDisk, err)
	}

	big, err := a.PutFor("k", dirA, "big.csv", "text/csv", bytes.Repeat([]byte("x,"), 1<<10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(big.ID); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("an artifact over the cap on B: %v, want not found", err)
	}
	if _, _, err := a.Read(big.ID); err != nil {
		t.Fatalf("an artifact over the cap on A: %v", err)
	}
	if _, err := b.Get("0123456789abcdef0123456789abcdef-none.svg"); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("an id never stored: %v", err)
	}

	srv.Stop()
	during, err := a.PutFor("k", dirA, "during.svg", "image/svg+xml", data)
	if err != nil {
		t.Fatalf("a write with the store down: %v", err)
	}
	if _, _, err := a.Read(during.ID); err != nil {
		t.Fatalf("A's own artifact, store down: %v", err)
	}
	if _, err := b.Get(during.ID); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("B, store down: %v", err)
	}
}
