package wasmcheck

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GlobalPrefix starts the names under which Split exports a module's
// mutable globals: GlobalPrefix followed by the global's index.
const GlobalPrefix = "toolshed.global."

// Image is a module split for a host that lays out linear memory itself:
// the module without its data segments, and the segments, merged.
type Image struct {
	// Module is the module with its data section removed and every
	// mutable global it defines exported (see GlobalPrefix). Everything
	// else is byte for byte the original, custom sections included.
	Module []byte
	// Segments are the module's active data segments merged: ascending
	// offsets, none overlapping, all inside the memory's minimum size.
	// Gaps of up to the merge distance between two segments are filled
	// with zeros, as a fresh memory holds there anyway. Data points into
	// the original module.
	Segments []Segment
	// Globals are the export names of the module's mutable globals, by
	// ascending global index.
	Globals []string
	// SegmentsBefore is how many data segments the module had.
	SegmentsBefore int
	// MinPages is the memory's minimum size in 64 KiB pages.
	MinPages uint32
}

// Segment is data to copy into linear memory at Offset before any code of
// the module runs.
type Segment struct {
	Offset uint32
	Data   []byte
}

// ErrNotSplittable is a module Split leaves as it is; the error wrapping
// it says why.
var ErrNotSplittable = errors.New("module kept whole")

// Split rewrites a module that Check accepted (st are its Stats) for a
// host that applies its data segments itself, merging segments no more
// than gap bytes apart. Instantiating Image.Module and copying
// Image.Segments into its memory gives the memory, globals and tables
// the original module has after instantiation, provided nothing runs in
// between: so a module with a start section is kept whole, as is one
// whose segments a host could not apply beforehand (passive segments,
// memory.init or data.drop, a data count section, a segment offset that
// is not a constant, segments that overlap or lie outside the memory's
// minimum size, an imported memory or global).
func Split(code []byte, st Stats, gap int) (*Image, error) {
	keep := func(format string, args ...any) (*Image, error) {
		return nil, fmt.Errorf("%w: %s", ErrNotSplittable, fmt.Sprintf(format, args...))
	}
	if st.DataOps {
		return keep("it uses memory.init or data.drop")
	}
	if len(code) < 8 {
		return keep("too short")
	}
	type section struct {
		id         byte
		start, end int // the whole section, id byte included
		body       *reader
	}
	var secs []section
	r := &reader{b: code, pos: 8}
	for r.pos < len(r.b) {
		start := r.pos
		id := r.byte()
		size := r.u32()
		if r.err != nil || uint64(size) > uint64(len(r.b)-r.pos) {
			return keep("malformed section at offset %d", start)
		}
		secs = append(secs, section{id: id, start: start, end: r.pos + int(size),
			body: &reader{b: r.b[r.pos : r.pos+int(size)], base: r.pos}})
		r.pos += int(size)
	}
	img := &Image{}
	var mutable []uint32
	hasMemory := false
	var data *reader
	for _, s := range secs {
		b := s.body
		switch s.id {
		case 2:
			n := b.u32()
			for i := uint32(0); i < n && b.err == nil; i++ {
				b.name()
				b.name()
				switch kind := b.byte(); kind {
				case 0x00:
					b.u32()
				case 0x01:
					b.byte()
					b.limits()
				case 0x02:
					return keep("it imports a memory")
				case 0x03:
					return keep("it imports a global")
				}
			}
		case 5:
			if n := b.u32(); n > 1 {
				return keep("it defines %d memories", n)
			} else if n == 1 {
				hasMemory = true
				img.MinPages, _, _ = b.limits()
			}
		case 6:
			n := b.u32()
			for i := uint32(0); i < n && b.err == nil; i++ {
				b.byte() // value type
				if b.byte() == 1 {
					mutable = append(mutable, i)
				}
				if _, _, ok := constExpr(b); !ok && b.err == nil {
					return keep("global %d: initialiser is not a constant expression", i)
				}
			}
		case 7:
			n := b.u32()
			for i := uint32(0); i < n && b.err == nil; i++ {
				nlen := b.u32()
				if b.err == nil && int(nlen) <= len(b.b)-b.pos {
					if strings.HasPrefix(string(b.b[b.pos:b.pos+int(nlen)]), GlobalPrefix) {
						return keep("it exports a name starting %q", GlobalPrefix)
					}
				}
				b.skip(int(nlen))
				b.byte() // kind
				b.u32()  // index
			}
		case 8:
			return keep("it has a start function")
		case 11:
			data = b
		case 12:
			return keep("it has a data count section")
		}
		if b.err != nil {
			return keep("section %d: %v", s.id, b.err)
		}
	}
	type seg struct {
		off  uint64
		data []byte
	}
	var segs []seg
	if data != nil {
		n := data.u32()
		for i := uint32(0); i < n && data.err == nil; i++ {
			switch flags := data.u32(); flags {
			case 0:
			case 2:
				if mem := data.u32(); mem != 0 {
					return keep("data segment %d is for memory %d", i, mem)
				}
			default:
				return keep("data segment %d is passive or of kind %d", i, flags)
			}
			off, lone, _ := constExpr(data)
			if !lone || off < 0 {
				return keep("data segment %d: offset is not an i32.const", i)
			}
			size := data.u32()
			if data.err != nil || int(size) > len(data.b)-data.pos {
				return keep("data segment %d is truncated", i)
			}
			segs = append(segs, seg{uint64(off), data.b[data.pos : data.pos+int(size)]})
			data.pos += int(size)
		}
		if data.err != nil || data.pos != len(data.b) {
			return keep("malformed data section")
		}
	}
	img.SegmentsBefore = len(segs)
	if len(segs) > 0 && !hasMemory {
		return keep("it has data but no memory")
	}
	// Later segments overwrite earlier ones; the merge needs them apart.
	slices.SortStableFunc(segs, func(a, b seg) int { return int(int64(a.off) - int64(b.off)) })
	limit := uint64(img.MinPages) << 16
	for i, s := range segs {
		if s.off+uint64(len(s.data)) > limit {
			return keep("a data segment ends at %d, past the memory's minimum of %d bytes", s.off+uint64(len(s.data)), limit)
		}
		if i > 0 && s.off < segs[i-1].off+uint64(len(segs[i-1].data)) {
			return keep("data segments overlap at offset %d", s.off)
		}
	}
	for i := 0; i < len(segs); {
		j, end := i+1, segs[i].off+uint64(len(segs[i].data))
		for j < len(segs) && segs[j].off-end <= uint64(gap) {
			end = segs[j].off + uint64(len(segs[j].data))
			j++
		}
		if j == i+1 {
			if len(segs[i].data) > 0 {
				img.Segments = append(img.Segments, Segment{Offset: uint32(segs[i].off), Data: segs[i].data})
			}
		} else {
			buf := make([]byte, end-segs[i].off)
			for _, s := range segs[i:j] {
				copy(buf[s.off-segs[i].off:], s.data)
			}
			img.Segments = append(img.Segments, Segment{Offset: uint32(segs[i].off), Data: buf})
		}
		i = j
	}
	// The new exports: every mutable global, under its reserved name (one
	// the module exports already is then exported twice, which is legal).
	var add []byte
	added := 0
	for _, g := range mutable {
		name := GlobalPrefix + strconv.FormatUint(uint64(g), 10)
		img.Globals = append(img.Globals, name)
		add = appendU32(add, uint32(len(name)))
		add = append(add, name...)
		add = append(add, 0x03)
		add = appendU32(add, g)
		added++
	}
	out := append(make([]byte, 0, len(code)), code[:8]...)
	wroteExports := false
	writeExports := func(body []byte, count uint32) {
		sec := appendU32(nil, count+uint32(added))
		sec = append(sec, body...)
		sec = append(sec, add...)
		out = append(out, 7)
		out = appendU32(out, uint32(len(sec)))
		out = append(out, sec...)
		wroteExports = true
	}
	for _, s := range secs {
		switch {
		case s.id == 11:
			continue
		case s.id == 7:
			b := &reader{b: s.body.b}
			n := b.u32()
			writeExports(b.b[b.pos:], n)
			continue
		case s.id != 0 && !wroteExports && added > 0 && order(s.id) > order(7):
			writeExports(nil, 0)
		}
		out = append(out, code[s.start:s.end]...)
	}
	if !wroteExports && added > 0 {
		writeExports(nil, 0)
	}
	img.Module = out
	return img, nil
}

// constExpr reads a constant expression up to its end: ok when it is one,
// and its value when it is a lone i32.const.
func constExpr(r *reader) (v int64, lone, ok bool) {
	n := 0
	for r.err == nil {
		op := r.byte()
		n++
		switch op {
		case 0x0b:
			return v, lone && n == 2, r.err == nil
		case 0x41:
			v = r.sleb32()
			lone = n == 1
		case 0x42:
			r.sleb(64)
		case 0x43:
			r.skip(4)
		case 0x44:
			r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0xd0: // ref.null
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			if r.u32() != 12 {
				return 0, false, false
			}
			r.skip(16)
		default:
			return 0, false, false
		}
	}
	return 0, false, false
}

// sleb32 reads a signed LEB128 of at most 32 bits.
func (r *reader) sleb32() int64 {
	var v int64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift >= 35 {
			r.err = errors.New("integer too large")
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return int64(int32(v))
		}
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
