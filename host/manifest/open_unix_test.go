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
		start := time.Now()
		_, err := LoadFile(path)
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s: LoadFile took %s", path, el)
		}
		var es Errors
		if !errors.As(err, &es) || es[0].File != path || !strings.Contains(es[0].Reason, want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
