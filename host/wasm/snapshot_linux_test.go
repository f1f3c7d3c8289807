//go:build linux

package wasm

import (
	"bytes"
	"testing"
)

// Two memories from one image: each starts as the image, writes stay
// private, the image never changes, growth stops at the maximum, and a
// closed image is never mapped again.
func TestMemImage(t *testing.T) {
	img := bytes.Repeat([]byte("snapshot"), 2<<16/8) // 2 pages
	im, err := newMemImage(img)
	if err != nil {
		t.Fatal(err)
	}
	alloc := im.allocator(nil, nil)
	a, b := alloc.Allocate(0, 4<<16), alloc.Allocate(0, 4<<16)
	ba, bb := a.Reallocate(2<<16), b.Reallocate(2<<16)
	if !bytes.Equal(ba, img) || !bytes.Equal(bb, img) {
		t.Fatal("a memory does not start as the image")
	}
	copy(ba, "changed")
	if !bytes.Equal(bb, img) {
		t.Error("a write to one memory shows in the other")
	}
	ba = a.Reallocate(4 << 16)
	if len(ba) != 4<<16 || !bytes.Equal(ba[2<<16:], make([]byte, 2<<16)) {
		t.Error("growth past the image is not zeros")
	}
	if a.Reallocate(5<<16) != nil {
		t.Error("grew past the maximum")
	}
	a.Free()
	c := alloc.Allocate(0, 4<<16)
	if !bytes.Equal(c.Reallocate(2<<16), img) {
		t.Error("the image changed")
	}
	c.Free()
	b.Free()
	im.close()
	d := alloc.Allocate(0, 4<<16)
	if got := d.Reallocate(2 << 16); got == nil || bytes.Equal(got, img) {
		t.Error("a closed image was mapped")
	}
	d.Free()
}

// A memory freed while its instance's code runs (a module closed from
// another goroutine) stays mapped and usable until the last runner
// leaves, then is unmapped; freed with no runner, it is unmapped at once.
func TestFreeWaitsForRunningCode(t *testing.T) {
	g := newExecGate() // the instantiation runs
	m := newMmapMemory(g, 4<<16)
	buf := m.Reallocate(1 << 16)
	g.enter()    // a call
	g.exit()     // the instantiation is done; the call still runs
	m.Free()     // closed from elsewhere
	buf[100] = 7 // would fault if unmapped
	if m.buf == nil || buf[100] != 7 {
		t.Fatal("the memory was unmapped while code ran in it")
	}
	g.exit() // the call returns
	if m.buf != nil {
		t.Fatal("the memory was not unmapped when the last runner left")
	}
	idle := newExecGate()
	idle.exit()
	m2 := newMmapMemory(idle, 4<<16)
	m2.Reallocate(1 << 16)
	m2.Free()
	if m2.buf != nil {
		t.Fatal("a memory freed with no runner was not unmapped at once")
	}
}
