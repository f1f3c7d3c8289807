//go:build unix

package catalog

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReloadSurvivesAnyFileType: FIFOs, a socket, a symbolic link to
// /dev/zero, a directory, dangling, looping and escaping symbolic links,
// all named *.json, and a module that is a FIFO: each is a load error for
// its file, the load ends within a bound, and the good plugin stays. Hot
// reload (Watch) goes on after a FIFO appears (class 11).
func TestReloadSurvivesAnyFileType(t *testing.T) {
	dir := t.TempDir()
	unitWith(t, dir, "good.json", "good", "goodTool")
	mustMkfifo := func(name string) {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustMkfifo("fifo.json")
	ln, err := net.Listen("unix", filepath.Join(dir, "sock.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("/dev/zero", "zero.json")
	link("fifo.json", "to-fifo.json")
	link("missing.json", "dangling.json")
	link("loop.json", "loop.json")
	outside := filepath.Join(t.TempDir(), "outside.json")
	write(t, filepath.Dir(outside), "outside.json", manifestJSON("outside", zeros, "outsideTool"))
	link(outside, "escape.json")
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o755)
	// A manifest whose module is a FIFO.
	write(t, dir, "pipe.json", manifestJSON("pipe", zeros, "pipeTool"))
	mustMkfifo("pipe.wasm")

	var l *Live
	loadWithin(t, 60*time.Second, func() (*Snapshot, error) {
		var err error
		l, err = NewLive(dir, LiveOptions{})
		if err != nil {
			return nil, err
		}
		return l.Snapshot(), nil
	})
	s := l.Snapshot()
	if _, ok := s.Tool("goodTool"); !ok || len(s.Plugins) != 1 {
		t.Fatalf("the good plugin is not alone in the catalog: %d plugins, %v", len(s.Plugins), s.Errors)
	}
	for file, want := range map[string]string{
		"fifo.json":     "not read: open: is a named pipe (FIFO), not a regular file",
		"to-fifo.json":  "is a named pipe (FIFO), not a regular file",
		"sock.json":     "is a socket, not a regular file",
		"zero.json":     "not read: openat: path escapes from parent",
		"dangling.json": "no such file or directory",
		"loop.json":     "too many levels of symbolic links",
		"escape.json":   "not read: openat: path escapes from parent",
		"dir.json":      "is a directory, not a regular file",
		"pipe.json":     "plugin \"pipe\": module " + filepath.Join(dir, "pipe.wasm") + ": open: is a named pipe (FIFO), not a regular file; the plugin is left out until its module is there and matches",
	} {
		if msg := errorFor(s, file); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want %q", file, msg, want)
		}
	}
	for _, e := range s.Errors {
		t.Log(e)
	}
	if _, ok := s.Tool("outsideTool"); ok {
		t.Error("a symbolic link out of the directory was followed")
	}

	// Hot reload: a FIFO appears while the watcher runs; a unit dropped
	// after it is still picked up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Watch(ctx, WatchOptions{Debounce: 20 * time.Millisecond, Poll: 200 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	mustMkfifo("late-fifo.json")
	time.Sleep(100 * time.Millisecond)
	unitWith(t, dir, "later.json", "later", "laterTool")
	eventually(t, "the unit dropped after a FIFO", func() bool { return has(l, "laterTool") })
	if !has(l, "goodTool") || !strings.Contains(errorFor(l.Snapshot(), "late-fifo.json"), "named pipe") {
		t.Fatalf("after the watch: %v", l.Snapshot().Errors)
	}
}
