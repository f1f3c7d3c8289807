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
//
// The mapping is unmapped once the module is closed and none of its code
// runs (g, see execGate).
//
// Its size is charged to acct (the plugin memory budget) as it grows: a
// growth the budget refuses fails as memory.grow does at the cap.
func memoryAllocator(g *execGate, acct *memAccount) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory { return newLinearMemory(g, acct, max) })
}

// growthAccounted: the host's allocator charges every growth to the
// memory budget, and gives the charge back when it frees the memory.
const growthAccounted = true

type mmapMemory struct {
	buf     []byte      // the whole reservation; len is the current size
	heap    bool        // buf is a Go array, not a mapping
	gate    *execGate   // who may still run code in it
	acct    *memAccount // what its size is charged to (nil: nothing)
	started bool        // the first allocation (which wazero needs) is done
}

// newMmapMemory is a reservation of max bytes charged to nothing.
func newMmapMemory(g *execGate, max uint64) *mmapMemory { return newLinearMemory(g, nil, max) }

func newLinearMemory(g *execGate, acct *memAccount, max uint64) *mmapMemory {
	if max == 0 || max > 1<<32 {
		return &mmapMemory{buf: []byte{}, heap: true, acct: acct}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// No address space left (ulimit -v): a heap array of the
		// maximum, allocated once.
		return &mmapMemory{buf: make([]byte, 0, max), heap: true, acct: acct}
	}
	return &mmapMemory{buf: b[:0], gate: g, acct: acct}
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(cap(m.buf)) {
		return nil // over the reservation: the grow fails
	}
	// wazero cannot be refused the first allocation (the instance's
	// minimum, reserved before instantiation); later ones can.
	if !m.acct.resize(int64(size), !m.started) {
		return nil
	}
	m.started = true
	m.buf = m.buf[:size]
	return m.buf
}

// Free unmaps the reservation, at once when no code of the instance runs,
// else when the last goroutine running it leaves (execGate.exit).
func (m *mmapMemory) Free() {
	if m.heap {
		m.acct.free()
		return
	}
	m.gate.whenIdle(func() {
		defer m.acct.free()
		if m.buf != nil {
			syscall.Munmap(m.buf[:cap(m.buf)])
			m.buf = nil
		}
	})
}
