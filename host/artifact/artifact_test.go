package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPutGet(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{})
	a, err := s.Put(dir, "../../etc/各城市 订单.svg", "image/svg+xml", []byte("<svg/>"))
	if err != nil {
		t.Fatal(err)
	}
	if !idRE.MatchString(a.ID) || a.Name != "各城市-订单.svg" || a.ContentType != "image/svg+xml" || a.Size != 6 ||
		filepath.Dir(a.Path) != dir || a.URI() != "toolshed://artifacts/"+a.ID {
		t.Fatalf("%+v", a)
	}
	got, data, err := s.Read(a.ID)
	if err != nil || string(data) != "<svg/>" || got.ID != a.ID {
		t.Fatalf("read: %+v %q %v", got, data, err)
	}
	// Another store over the same directory (after a restart) finds it.
	other := New(Options{Dirs: []string{dir}})
	if got, err := other.Get(a.ID); err != nil || got.ContentType != "image/svg+xml" || got.Name != a.Name {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	for _, id := range []string{"", "../" + a.ID, a.ID[:31], strings.ToUpper(a.ID[:32]) + a.ID[32:], a.ID + "/x", "0123456789abcdef0123456789abcdef-none.svg"} {
		if _, err := other.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
	for _, c := range []struct{ name, ctype, want string }{
		{"chart.svg", "image/svg+xml", "chart.svg"},
		{"chart", "image/svg+xml", "chart.svg"},
		{"photo", "image/jpeg", "photo.jpg"},
		{"data.bin", "text/csv; charset=utf-8", "data.bin.csv"},
		{"", "", "artifact"},
		{"...", "application/x-unknown", "artifact"},
		{"x.HTML", "text/html", "x.HTML"},
		{strings.Repeat("a", 300) + ".png", "image/png", strings.Repeat("a", 96) + ".png"},
	} {
		if got := safeName(c.name, c.ctype); got != c.want {
			t.Errorf("safeName(%q, %q) = %q, want %q", c.name, c.ctype, got, c.want)
		}
	}
	if typeOf("x.exe") != "application/octet-stream" || typeOf("x.PNG") != "image/png" {
		t.Error("typeOf")
	}
}

// TestSweep: artifacts past MaxAge go, then the oldest until the rest
// fit in MaxBytes; other files stay.
func TestSweep(t *testing.T) {
	dir, dir2 := t.TempDir(), t.TempDir()
	s := New(Options{MaxAge: time.Hour, MaxBytes: 31})
	put := func(d string, age time.Duration, size int) Artifact {
		a, err := s.Put(d, "f.txt", "text/plain", make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		os.Chtimes(a.Path, when, when)
		return a
	}
	expired := put(dir, 2*time.Hour, 1)
	oldest := put(dir2, 30*time.Minute, 10)
	older := put(dir, 20*time.Minute, 10)
	newest := put(dir2, time.Minute, 10)
	keep := filepath.Join(dir, "notes.txt")
	os.WriteFile(keep, []byte("not an artifact"), 0o644)
	n, err := s.Sweep()
	if err != nil || n != 1 {
		t.Fatalf("swept %d: %v", n, err)
	}
	// MaxBytes holds at the write: 30 bytes kept, 10 more evict the
	// oldest.
	put(dir, 0, 10)
	for _, a := range []Artifact{expired, oldest} {
		if _, err := os.Stat(a.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there", a.ID)
		}
		if _, err := s.Get(a.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) after sweep: %v", a.ID, err)
		}
	}
	for _, a := range []Artifact{older, newest} {
		if _, err := s.Get(a.ID); err != nil {
			t.Errorf("%s removed: %v", a.ID, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Error("a file that is not an artifact was removed")
	}
	// Past MaxAge, an artifact is gone for Get even before a sweep.
	stale := put(dir, 90*time.Minute, 1)
	if _, err := New(Options{MaxAge: time.Hour, Dirs: []string{dir}}).Get(stale.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("stale artifact served: %v", err)
	}
}
