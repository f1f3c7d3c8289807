//go:build linux

package wasm

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// snapshotsSupported: restored instances map their memory from a memfd.
const snapshotsSupported = true

// memImage is a captured linear memory in a sealed memfd: nothing can
// change it once written, and every restored instance maps it
// copy-on-write, so its pages are shared until an instance writes one.
// It is safe for concurrent use.
type memImage struct {
	mu   sync.RWMutex // held (read) while fd is used; close takes it to retire fd
	fd   int          // -1 once closed
	size uint64
}

func newMemImage(b []byte) (*memImage, error) {
	fd, err := unix.MemfdCreate("toolshed-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("write snapshot: %w", err)
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seal snapshot: %w", err)
	}
	return &memImage{fd: fd, size: uint64(len(b))}, nil
}

// close closes the memfd; instances restored already keep their
// mappings, later restores fail (a closed image is never read again, so
// no file that reuses the descriptor's number can be mapped instead).
func (im *memImage) close() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.fd >= 0 {
		unix.Close(im.fd)
		im.fd = -1
	}
}

// allocator gives each instance a linear memory whose first im.size
// bytes are a private copy-on-write mapping of the image, the rest of its
// reservation anonymous as for any instance (see memoryAllocator): one
// reservation of the memory's maximum, so the limit holds the same way.
func (im *memImage) allocator(g *execGate, acct *memAccount) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		im.mu.RLock()
		defer im.mu.RUnlock()
		mm := newLinearMemory(g, acct, max)
		if im.fd < 0 || mm.heap || im.size > uint64(cap(mm.buf)) {
			// No mapping to place the image in: a copy.
			if im.fd >= 0 && mm.heap && uint64(cap(mm.buf)) >= im.size {
				b := mm.buf[:im.size]
				if _, err := unix.Pread(im.fd, b, 0); err == nil {
					return mm
				}
			}
			// Zeros the size of the image (wazero needs a buffer):
			// the instance's first call fails, nothing is exposed.
			mm.acct = nil // the account goes with the copy
			mm.Free()
			return &mmapMemory{buf: make([]byte, 0, im.size), heap: true, acct: acct}
		}
		base := unsafe.Pointer(unsafe.SliceData(mm.buf))
		if _, err := unix.MmapPtr(im.fd, 0, base, uintptr(im.size), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			// The reservation stays anonymous (zeros): copy instead.
			if _, err := unix.Pread(im.fd, mm.buf[:im.size], 0); err != nil {
				mm.acct = nil // the account goes with the copy
				mm.Free()
				return &mmapMemory{buf: make([]byte, 0, im.size), heap: true, acct: acct}
			}
		}
		return mm
	})
}
