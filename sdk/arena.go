package sdk

import "unsafe"

// Arenas for what a call hands to a handler and gets back from JSON.
//
// Under the host's deadline enforcement a small allocation costs the guest
// ~2 µs (the allocator's branches, each priced like a loop iteration), more
// than the rest of a small call's decoding. So the strings and []string of
// decoded arguments and the bytes of a JSON result (whose content string
// shares them) are carved out of chunks allocated now and then instead: a
// call copies its arguments once into a byte chunk (the strings decoded
// from them are substrings of that copy), and the chunk is never written
// again where it was handed out. A chunk lives as long as anything carved from it; that
// holds at most a chunk's worth of memory beyond what the plugin keeps.

const (
	byteChunk   = 8 << 10
	stringChunk = 128
)

var (
	bytesArena   []byte // the free tail of the current byte chunk: len 0
	stringsArena []string
)

// keepBytes returns an immutable copy of b (capacity = length, so an
// append to it cannot reach the next one).
func keepBytes(b []byte) []byte {
	if len(b) > cap(bytesArena) {
		if len(b) > byteChunk/4 {
			return append([]byte(nil), b...)
		}
		bytesArena = make([]byte, 0, byteChunk)
	}
	out := append(bytesArena, b...)
	bytesArena = bytesArena[len(b):len(b)]
	return out[:len(b):len(b)]
}

// freeTail returns the current byte chunk's free tail (length 0), for an
// encoder to append to; commitTail takes what it wrote, if it still is
// there (an append that outgrew the tail moved it elsewhere).
func freeTail() []byte { return bytesArena }

func commitTail(b []byte) []byte {
	if cap(bytesArena) > 0 && len(b) <= cap(bytesArena) && unsafe.SliceData(b) == unsafe.SliceData(bytesArena) {
		bytesArena = bytesArena[len(b):len(b)]
		return b[:len(b):len(b)]
	}
	return b
}

// keepStrings returns a copy of s (capacity = length).
func keepStrings(s []string) []string {
	if len(s) > cap(stringsArena) {
		if len(s) > stringChunk/4 {
			return append([]string(nil), s...)
		}
		stringsArena = make([]string, 0, stringChunk)
	}
	out := append(stringsArena, s...)
	stringsArena = stringsArena[len(s):len(s)]
	return out[:len(s):len(s)]
}
