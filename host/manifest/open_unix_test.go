//go:build unix

package manifest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadFileOnlyRegular: LoadFile refuses a FIFO, a socket, a device and
// a directory without blocking (issue 13, class 11).
func TestLoadFileOnlyRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock.json")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.json")
	os.Mkdir(sub, 0o755)
	for path, want := range map[string]string{
		fifo: "named pipe (FIFO), not a regular file", sock: "socket, not a regular file",
		zero: "character device, not a regular file", sub: "directory, not a regular file",
	} {
		// A read that blocked (a FIFO with no writer) would never return:
		// the deadline is for a hang, not a speed (a machine ten times
		// slower meets it).
		done := make(chan error, 1)
		go func() { _, err := LoadFile(path); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: LoadFile did not return", path)
		}
		var es Errors
		if !errors.As(err, &es) || es[0].File != path || !strings.Contains(es[0].Reason, want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
