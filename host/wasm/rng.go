package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
)

// The Go runtime's random generators, as a snapshot must re-seed them.
//
// A Go program for wasip1 seeds itself once, in the runtime's randinit:
// 32 bytes from WASI random_get seed the global generator (a ChaCha8
// state, runtime.globalRand), whose outputs seed the hash key and then
// m0's own ChaCha8 state (mrandinit), and m0.cheaprand is m0's first
// output. Every later runtime.rand comes from m0's state: math/rand's
// and math/rand/v2's global sources, hash/maphash.MakeSeed, each new
// map's seed, each map iteration's starting point, select's order. An
// instance restored from a snapshot would replay them all, so each one
// gets new states before it runs.
//
// The states are found in the captured memory by what they must hold,
// not by symbol addresses (a wasm binary has none for data): a ChaCha8
// state (internal/chacha8rand.State: buf [32]uint64, seed [4]uint64, i,
// n, c uint32) whose buffer is exactly the ChaCha8 block of its seed at
// its counter — 256 bytes no other data matches by accident — and, for
// m0's, the state whose seed descends from the entropy the host gave
// the runtime at capture, with m0.cheaprand right after it equal to that
// generator's first output advanced by whole cheaprand steps (xorshift64+
// on wasm). If any of
// that is not found, the module is not a Go runtime this code knows and
// the snapshot is refused (fresh instances).
const (
	chachaBuf    = 0   // buf [32]uint64
	chachaSeed   = 256 // seed [4]uint64
	chachaI      = 288 // i uint32
	chachaN      = 292 // n uint32
	chachaC      = 296 // c uint32
	chachaSize   = 304 // with padding to 8 bytes
	chachaChunk  = 32
	chachaCtrMax = 16
	chachaCtrInc = 4
	chachaReseed = 4
)

// goRNG is where a Go runtime keeps its generators in linear memory.
type goRNG struct {
	states    []uint32 // every ChaCha8 state: m0's and the global one
	m0        uint32   // m0's state
	cheaprand uint32   // m0.cheaprand, right after m0's state
}

// chachaState is one ChaCha8 state as laid out in memory.
type chachaState struct {
	buf  [32]uint64
	seed [4]uint64
	i, n uint32
	c    uint32
}

func seedBytes(seed [4]uint64) [32]byte {
	var b [32]byte
	for i, w := range seed {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

// chachaBlock returns the buffer of a state with this seed at counter c,
// by running math/rand/v2's ChaCha8 (the same generator) to that point.
func chachaBlock(seed [4]uint64, c uint32) (buf [32]uint64) {
	g := mrand.NewChaCha8(seedBytes(seed))
	for k := uint32(0); k < c/chachaCtrInc; k++ {
		for range chachaChunk {
			g.Uint64()
		}
	}
	n := chachaChunk
	if c == chachaCtrMax-chachaCtrInc {
		n -= chachaReseed
	}
	for k := range n {
		buf[k] = g.Uint64()
	}
	if n < chachaChunk {
		// The last words are never output: they seed the next block.
		next := nextSeed(g)
		copy(buf[n:], next[:])
	}
	return buf
}

// nextSeed draws one value from g, which must be at the end of its last
// block, and returns the seed that block left (MarshalBinary holds it).
func nextSeed(g *mrand.ChaCha8) (seed [4]uint64) {
	g.Uint64()
	b, _ := g.MarshalBinary() // "chacha8:", used (8), seed (32)
	for i := range seed {
		seed[i] = binary.LittleEndian.Uint64(b[16+8*i:])
	}
	return seed
}

// seedChain returns the seeds a generator started from seed goes through,
// the first n of them (seed itself first).
func seedChain(seed [4]uint64, n int) [][4]uint64 {
	out := [][4]uint64{seed}
	g := mrand.NewChaCha8(seedBytes(seed))
	period := 4*chachaChunk - chachaReseed // outputs between two reseeds
	for skip := period; len(out) < n; skip = period - 1 {
		// nextSeed drew the first output of the new period already.
		for range skip {
			g.Uint64()
		}
		out = append(out, nextSeed(g))
	}
	return out
}

func readState(mem []byte, at uint32) (s chachaState) {
	le := binary.LittleEndian
	for k := range s.buf {
		s.buf[k] = le.Uint64(mem[at+8*uint32(k):])
	}
	for k := range s.seed {
		s.seed[k] = le.Uint64(mem[at+chachaSeed+8*uint32(k):])
	}
	s.i, s.n, s.c = le.Uint32(mem[at+chachaI:]), le.Uint32(mem[at+chachaN:]), le.Uint32(mem[at+chachaC:])
	return s
}

// plausible is the cheap test before the block is computed.
func plausible(mem []byte, at uint32) bool {
	le := binary.LittleEndian
	i, n, c := le.Uint32(mem[at+chachaI:]), le.Uint32(mem[at+chachaN:]), le.Uint32(mem[at+chachaC:])
	if c%chachaCtrInc != 0 || c >= chachaCtrMax || i > n {
		return false
	}
	if want := uint32(chachaChunk); c == chachaCtrMax-chachaCtrInc {
		want -= chachaReseed
		if n != want {
			return false
		}
	} else if n != want {
		return false
	}
	seed := mem[at+chachaSeed : at+chachaSeed+32]
	return le.Uint64(seed) != 0 || le.Uint64(seed[8:]) != 0
}

// findChaCha returns the offsets of every ChaCha8 state in mem.
func findChaCha(mem []byte) []uint32 {
	var out []uint32
	for at := uint32(0); uint64(at)+chachaSize <= uint64(len(mem)); at += 8 {
		if !plausible(mem, at) {
			continue
		}
		s := readState(mem, at)
		if s.buf == chachaBlock(s.seed, s.c) {
			out = append(out, at)
		}
	}
	return out
}

// maxReseeds bounds how far m0's generator may have gone during the
// initialiser: 124 outputs a seed, so about 127,000 runtime.rand calls.
const maxReseeds = 1024

// errNotGo is a module without the Go runtime's generators: not a
// snapshot failure, just not a module this host knows how to re-seed.
var errNotGo = errors.New("not a Go runtime whose generators the host can re-seed")

// locateGoRNG finds a Go runtime's generators in the memory it had after
// its initialiser, given the first 32 bytes random_get gave it.
func locateGoRNG(mem []byte, entropy []byte) (goRNG, error) {
	if len(entropy) < 32 {
		return goRNG{}, fmt.Errorf("%w: it read no 32-byte seed from random_get in its initialiser", errNotGo)
	}
	var s0 [4]uint64
	for i := range s0 {
		s0[i] = binary.LittleEndian.Uint64(entropy[8*i:])
	}
	states := findChaCha(mem)
	if len(states) == 0 {
		return goRNG{}, fmt.Errorf("%w: no ChaCha8 generator state in its memory", errNotGo)
	}
	// m0's initial seed is four consecutive outputs of the global
	// generator (after the hash key's: which four is searched for); m0's
	// state is on that seed's chain, the chains walked in step so that
	// the usual case (few runtime.rand calls in the initialiser) is found
	// at once.
	global := mrand.NewChaCha8(seedBytes(s0))
	var outs []uint64
	for range 40 {
		outs = append(outs, global.Uint64())
	}
	byseed := map[[4]uint64]uint32{}
	for _, at := range states {
		byseed[readState(mem, at).seed] = at
	}
	type chain struct {
		init [4]uint64
		g    *mrand.ChaCha8
		cur  [4]uint64
	}
	var chains []*chain
	for j := 0; j+4 <= len(outs); j++ {
		seed := [4]uint64(outs[j : j+4])
		chains = append(chains, &chain{init: seed, g: mrand.NewChaCha8(seedBytes(seed)), cur: seed})
	}
	const period = 4*chachaChunk - chachaReseed
	checked := map[uint32]bool{}
	for k := 0; k < maxReseeds; k++ {
		for _, c := range chains {
			if k > 0 {
				skip := period
				if k > 1 {
					skip-- // nextSeed drew one already
				}
				for range skip {
					c.g.Uint64()
				}
				c.cur = nextSeed(c.g)
			}
			at, ok := byseed[c.cur]
			if !ok || checked[at] {
				continue
			}
			// m0.cheaprand follows m0's state: its first output, then
			// advanced by cheaprand's steps. (The global generator's
			// state descends from the entropy too, re-seeded from its
			// own outputs: it has no cheaprand after it.)
			checked[at] = true
			cr := at + chachaSize
			if uint64(cr)+8 > uint64(len(mem)) {
				continue
			}
			v := binary.LittleEndian.Uint64(mem[cr:])
			x := mrand.NewChaCha8(seedBytes(c.init)).Uint64()
			for range maxCheapSteps {
				if x == v {
					return goRNG{states: states, m0: at, cheaprand: cr}, nil
				}
				x = cheapStep(x)
			}
		}
	}
	return goRNG{}, fmt.Errorf("none of the %d ChaCha8 states descends from the runtime's seed (not a Go runtime this host knows)", len(states))
}

// maxCheapSteps bounds the runtime.cheaprand calls the initialiser may
// have made.
const maxCheapSteps = 1 << 24

// cheapStep is runtime.cheaprand's step on 32-bit-word architectures, wasm
// among them: xorshift64+ on the two halves.
func cheapStep(x uint64) uint64 {
	s1, s0 := uint32(x), uint32(x>>32)
	s1 ^= s1 << 17
	s1 = s1 ^ s0 ^ s1>>7 ^ s0>>16
	return uint64(s0) | uint64(s1)<<32
}

// memWriter is the part of api.Memory reseed needs.
type memWriter interface {
	Write(offset uint32, v []byte) bool
}

// reseed gives every generator of a restored instance a new seed from src
// (crypto/rand but in tests): each ChaCha8 state as Init64 leaves it, and
// a new m0.cheaprand. It returns m0's new seed (for the known-answer
// check).
func (r goRNG) reseed(mem memWriter, src io.Reader) ([4]uint64, error) {
	var m0 [4]uint64
	// One read for every seed: 32 bytes a state, 8 for cheaprand.
	raw := make([]byte, 32*len(r.states)+8)
	if _, err := io.ReadFull(src, raw); err != nil {
		return m0, err
	}
	var b [chachaSize]byte
	le := binary.LittleEndian
	for k, at := range r.states {
		key := raw[32*k : 32*k+32]
		var seed [4]uint64
		for i := range seed {
			seed[i] = le.Uint64(key[8*i:])
		}
		buf := chachaBlock(seed, 0)
		for j, w := range buf {
			le.PutUint64(b[8*j:], w)
		}
		copy(b[chachaSeed:], key)
		le.PutUint32(b[chachaI:], 0)
		le.PutUint32(b[chachaN:], chachaChunk)
		le.PutUint32(b[chachaC:], 0)
		if !mem.Write(at, b[:chachaC+4]) {
			return m0, fmt.Errorf("generator state at %#x is outside memory", at)
		}
		if at == r.m0 {
			m0 = seed
		}
	}
	if !mem.Write(r.cheaprand, raw[len(raw)-8:]) {
		return m0, fmt.Errorf("cheaprand at %#x is outside memory", r.cheaprand)
	}
	return m0, nil
}

// check is the known-answer test on a restored instance after it ran
// some code: m0's state (state, read from its offset) must be a ChaCha8
// state on the chain of the seed reseed gave it.
func (r goRNG) check(state []byte, seed [4]uint64) error {
	if len(state) < chachaSize || !plausible(state, 0) {
		return errors.New("m0's generator state is gone")
	}
	s := readState(state, 0)
	if s.buf != chachaBlock(s.seed, s.c) {
		return errors.New("m0's generator state is not a ChaCha8 state")
	}
	for _, c := range seedChain(seed, 4) {
		if c == s.seed {
			return nil
		}
	}
	return errors.New("m0's generator does not run from the seed the host gave it")
}
