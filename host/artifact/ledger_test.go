package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// dirBytes is what the artifact files of dir hold, on disk.
func dirBytes(t *testing.T, dir string) (n int, size int64) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		info, _ := e.Info()
		n, size = n+1, size+info.Size()
	}
	return n, size
}

// TestMaxBytesAtEveryWrite: the store never holds more than MaxBytes, at
// any write, without a sweep; a flood evicts the flooder's own files, and
// a quiet tenant's chart survives it.
func TestMaxBytesAtEveryWrite(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{MaxBytes: 100 << 10})
	chart, err := s.PutFor("quiet", dir, "chart.svg", "image/svg+xml", make([]byte, 20<<10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.PutFor("flood", dir, "x.bin", "", make([]byte, 7<<10)); err != nil {
			t.Fatalf("flood write %d: %v", i, err)
		}
		if _, size := dirBytes(t, dir); size > 100<<10 {
			t.Fatalf("after flood write %d the folder holds %d bytes; MaxBytes is %d", i, size, 100<<10)
		}
	}
	if _, err := s.Get(chart.ID); err != nil {
		t.Fatalf("the quiet tenant's chart was evicted by the flood: %v", err)
	}
	total, by := s.Usage()
	if _, size := dirBytes(t, dir); total != size || by["quiet"] != 20<<10 || by["flood"] > 80<<10 {
		t.Fatalf("usage %d %v, disk %d", total, by, size)
	}
	// A write larger than the store fails, and nothing is evicted for it.
	if _, err := s.PutFor("flood", dir, "big.bin", "", make([]byte, 101<<10)); !errors.Is(err, ErrFull) {
		t.Fatalf("a write over MaxBytes: %v", err)
	}
	// A tenant with nothing stored makes room from the biggest holder.
	if _, err := s.PutFor("new", dir, "n.bin", "", make([]byte, 30<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(chart.ID); err != nil {
		t.Fatalf("the quiet tenant's chart went before the flooder's files: %v", err)
	}
}

// TestMaxBytesCountsEarlierFiles: files from before a restart count, and
// are evicted before nothing fits.
func TestMaxBytesCountsEarlierFiles(t *testing.T) {
	dir := t.TempDir()
	first := New(Options{MaxBytes: 50 << 10})
	for range 4 {
		if _, err := first.Put(dir, "old.bin", "", make([]byte, 10<<10)); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{MaxBytes: 50 << 10, Dirs: []string{dir}})
	if _, err := s.PutFor("k", dir, "new.bin", "", make([]byte, 30<<10)); err != nil {
		t.Fatal(err)
	}
	if n, size := dirBytes(t, dir); size > 50<<10 || n != 3 {
		t.Fatalf("%d files, %d bytes after a restart and a write; MaxBytes %d", n, size, 50<<10)
	}
	// A file that vanished behind the store's back is forgotten at the
	// next sweep.
	es, _ := os.ReadDir(dir)
	os.Remove(filepath.Join(dir, es[0].Name()))
	if _, err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if total, _ := s.Usage(); total != 40<<10 && total != 20<<10 {
		t.Fatalf("usage %d after a file vanished", total)
	}
}
