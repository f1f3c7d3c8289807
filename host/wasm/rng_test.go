package wasm

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"testing"
)

// putState writes the state a generator seeded with seed has after n
// outputs, as internal/chacha8rand lays it out, at mem[at:].
func putState(mem []byte, at int, seed [4]uint64, n int) {
	chain := seedChain(seed, n/124+1)
	s := chain[len(chain)-1]
	used := uint32(n % 124)
	c := used / chachaChunk * chachaCtrInc
	i := used % chachaChunk
	if c > chachaCtrMax-chachaCtrInc {
		c = chachaCtrMax - chachaCtrInc
		i = used - 3*chachaChunk
	}
	size := uint32(chachaChunk)
	if c == chachaCtrMax-chachaCtrInc {
		size -= chachaReseed
	}
	le := binary.LittleEndian
	for k, w := range chachaBlock(s, c) {
		le.PutUint64(mem[at+8*k:], w)
	}
	for k, w := range s {
		le.PutUint64(mem[at+chachaSeed+8*k:], w)
	}
	le.PutUint32(mem[at+chachaI:], i)
	le.PutUint32(mem[at+chachaN:], size)
	le.PutUint32(mem[at+chachaC:], c)
}

// The state putState writes gives the same next output as math/rand/v2's
// ChaCha8 after n outputs: the layout and the block are the runtime's.
func TestChaChaLayout(t *testing.T) {
	seed := [4]uint64{1, 2, 3, 4}
	for _, n := range []int{0, 5, 31, 32, 95, 96, 123, 124, 300, 1000} {
		mem := make([]byte, chachaSize)
		putState(mem, 0, seed, n)
		s := readState(mem, 0)
		g := mrand.NewChaCha8(seedBytes(seed))
		for range n {
			g.Uint64()
		}
		if s.i < s.n && s.buf[s.i] != g.Uint64() {
			t.Errorf("after %d outputs the state's next is not ChaCha8's", n)
		}
		if got := findChaCha(mem); len(got) != 1 {
			t.Errorf("after %d outputs: found %v", n, got)
		}
	}
}

// A synthetic Go runtime: the global generator seeded by the entropy, m0
// seeded by its outputs 4-7 and gone 200 outputs further, cheaprand 70
// steps on; random bytes and zeros around. locateGoRNG finds both and
// m0; reseed writes states the known-answer check accepts; a wrong
// entropy or a broken cheaprand is refused.
func TestLocateGoRNG(t *testing.T) {
	entropy := make([]byte, 32)
	rand.Read(entropy)
	var s0 [4]uint64
	for i := range s0 {
		s0[i] = binary.LittleEndian.Uint64(entropy[8*i:])
	}
	g := mrand.NewChaCha8(seedBytes(s0))
	var outs []uint64
	for range 12 {
		outs = append(outs, g.Uint64())
	}
	m0seed := [4]uint64(outs[4:8])
	mem := make([]byte, 1<<20)
	rand.Read(mem[:1<<19])
	const globalAt, m0At = 0x90000, 0x80008
	putState(mem, globalAt, [4]uint64(outs[8:12]), 3)
	putState(mem, m0At, m0seed, 200)
	cr := mrand.NewChaCha8(seedBytes(m0seed)).Uint64()
	for range 70 {
		cr = cheapStep(cr)
	}
	binary.LittleEndian.PutUint64(mem[m0At+chachaSize:], cr)

	r, err := locateGoRNG(mem, entropy)
	if err != nil {
		t.Fatal(err)
	}
	if r.m0 != m0At || r.cheaprand != m0At+chachaSize || len(r.states) != 2 {
		t.Fatalf("located %+v", r)
	}
	w := &sliceMem{b: bytes.Clone(mem)}
	seed, err := r.reseed(w, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.check(w.b[m0At:m0At+chachaSize], seed); err != nil {
		t.Errorf("check after reseed: %v", err)
	}
	if bytes.Equal(w.b[m0At:m0At+chachaSize], mem[m0At:m0At+chachaSize]) {
		t.Error("reseed left m0's state as it was")
	}
	if err := r.check(mem[m0At:m0At+chachaSize], seed); err == nil {
		t.Error("check accepts the old state for the new seed")
	}

	wrong := bytes.Clone(entropy)
	wrong[0] ^= 1
	if _, err := locateGoRNG(mem, wrong); err == nil {
		t.Error("found m0 from entropy it does not descend from")
	}
	broken := bytes.Clone(mem)
	binary.LittleEndian.PutUint64(broken[m0At+chachaSize:], cr^1)
	if _, err := locateGoRNG(broken, entropy); err == nil {
		t.Error("accepted a word after m0's state that is not its cheaprand")
	}
	if _, err := locateGoRNG(make([]byte, 1<<16), entropy); !errors.Is(err, errNotGo) {
		t.Errorf("memory without generators: %v", err)
	}
}

type sliceMem struct{ b []byte }

func (m *sliceMem) Write(off uint32, v []byte) bool {
	if uint64(off)+uint64(len(v)) > uint64(len(m.b)) {
		return false
	}
	copy(m.b[off:], v)
	return true
}
