//go:build linux

package wasm

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with one anonymous
// private mapping the size of its maximum, reserved but not committed
// (MAP_NORESERVE): growing never copies and never reallocates, pages cost
// RSS only once the plugin touches them, and Free returns them all. So an
// instance's linear memory costs the host at most its cap, where Go's
// append-and-copy growth cost up to about 5× (the old and new backing
// arrays live together until the garbage collector runs).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(newMmapMemory)

type mmapMemory struct {
	buf  []byte // the whole reservation; len is the current size
	heap bool   // buf is a Go array, not a mapping
}

func newMmapMemory(_, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		return &mmapMemory{buf: []byte{}, heap: true}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// No address space left (ulimit -v): a heap array of the
		// maximum, allocated once.
		return &mmapMemory{buf: make([]byte, 0, max), heap: true}
	}
	return &mmapMemory{buf: b[:0]}
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(cap(m.buf)) {
		return nil // over the reservation: the grow fails
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *mmapMemory) Free() {
	if m.buf != nil && !m.heap {
		syscall.Munmap(m.buf[:cap(m.buf)])
		m.buf = nil
	}
}
