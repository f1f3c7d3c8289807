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
	alloc := im.allocator()
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
