package wasm

import (
	"encoding/binary"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzExtismBlocks drives the Extism ABI's host-side blocks with any
// sequence of operations and addresses, as a hostile plugin would: every
// failure must be the ABI's own refusal (an extismFault, never a Go
// panic of the host), a refused operation must change nothing, and the
// bytes held must always equal the live blocks' sizes plus their
// overhead, within the plugin's limit.
func FuzzExtismBlocks(f *testing.F) {
	f.Add([]byte{0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Add([]byte{0, 255, 255, 255, 255, 255, 255, 255, 127, 2, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Add([]byte{0, 4, 0, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const pages = 16 // 1 MiB
		in := &instance{plugin: &Plugin{pages: pages, output: 1 << 20}}
		st := newExtismState()
		in.ext = st
		next := func(n int) ([]byte, bool) {
			if len(ops) < n {
				return nil, false
			}
			b := ops[:n]
			ops = ops[n:]
			return b, true
		}
		// do runs one operation; a refusal (extismFault) is an outcome,
		// any other panic fails the test.
		do := func(op func()) (refused bool) {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(extismFault); !ok {
						t.Fatalf("host panic: %v", r)
					}
					refused = true
					st.fault = nil
				}
			}()
			op()
			return false
		}
		for len(ops) > 0 {
			code, _ := next(1)
			arg, ok := next(8)
			if !ok {
				break
			}
			v := binary.LittleEndian.Uint64(arg)
			// Addresses mostly near real ones: a low index, any offset.
			addr := (v>>56%8)<<addrShift | v&0xffff
			before := st.held
			switch code[0] % 6 {
			case 0:
				if do(func() { st.alloc(in, int64(v%(2<<20)), "alloc") }) && st.held != before {
					t.Fatal("a refused alloc changed what is held")
				}
			case 1:
				st.free(in, addr)
			case 2:
				do(func() { st.block(addr, v>>48%16, "load") })
			case 3:
				do(func() {
					b := st.block(addr, 1, "store_u8")
					b[0] = byte(v)
				})
			case 4:
				var s []uint64 = []uint64{addr}
				extLength(nil, nil, in, st, s)
				idx := addr >> addrShift
				live := addr&offsetMask == 0 && idx > 0 && idx < uint64(len(st.blocks)) && st.live[idx]
				if !live && s[0] != 0 || live && s[0] != uint64(len(st.blocks[idx])) {
					t.Fatalf("length(%#x) = %d", addr, s[0])
				}
			case 5:
				st.reset(in)
			}
			var sum int64
			for i, b := range st.blocks {
				if st.live[i] {
					sum += int64(len(b)) + blockOverhead
				} else if b != nil {
					t.Fatalf("block %d is free but holds %d bytes", i, len(b))
				}
			}
			if sum != st.held || st.held > pages<<16 {
				t.Fatalf("held %d, live blocks %d, limit %d", st.held, sum, pages<<16)
			}
		}
	})
}

// FuzzServletResult: whatever a servlet outputs, the host maps it onto a
// tool result without a panic, its text valid UTF-8 and its structured
// result an object, or fails the call with an error.
func FuzzServletResult(f *testing.F) {
	f.Add([]byte(`{"content": [{"type": "text", "text": "hi"}], "isError": false}`))
	f.Add([]byte(`{"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}, {"type": "resource", "resource": {"uri": "x", "blob": "AA=="}}], "structuredContent": {"a": 1}}`))
	f.Add([]byte(`{"content": [{"type": "resource"}, {"type": "audio", "data": "%%%"}, {"type": "video"}], "isError": true}`))
	f.Add([]byte("{\"content\": [{\"type\": \"text\", \"text\": \"\xff\"}]}"))
	f.Fuzz(func(t *testing.T, out []byte) {
		in := &instance{plugin: &Plugin{name: "fuzz"}, quota: &quota{}}
		res, err := in.servletResult(t.Context(), out)
		if err != nil {
			return
		}
		if !utf8.ValidString(res.Content) {
			t.Fatalf("content not UTF-8: %q", res.Content)
		}
		if res.Structured != nil && (len(res.Structured) == 0 || res.Structured[0] != '{' || !json.Valid(res.Structured)) {
			t.Fatalf("structured %q", res.Structured)
		}
		if len(in.saved) != 0 {
			t.Fatal("artifacts stored without the grant")
		}
	})
}
