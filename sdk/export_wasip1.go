//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/toolshed/toolshed/sdk/abi"
)

// Buffers handed to the host stay referenced here so the garbage collector
// keeps them: the request buffer until the call, the result until the next.
// Both are reused from call to call (the ABI allows it), so a warm call
// allocates neither; buffers over keepBytes are let go after use.
var (
	pending = map[uint32][]byte{}
	spare   []byte // a request buffer no longer handed out
	last    []byte
)

const keepBytes = 64 << 10

//go:wasmexport toolshed_abi_version
func exportVersion() uint32 { return abi.Version }

//go:wasmexport toolshed_alloc
func exportAlloc(size uint32) uint32 {
	var b []byte
	if size > 0 && int(size) <= cap(spare) {
		b, spare = spare[:size], nil
	} else {
		b = make([]byte, max(size, 1))
	}
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pending[p] = b
	return p
}

//go:wasmexport toolshed_call
func exportCall(ptr, length uint32) uint64 {
	buf, ok := pending[ptr]
	delete(pending, ptr)
	var req []byte
	if ok && int(length) <= len(buf) {
		req = buf[:length]
	}
	if cap(last) > keepBytes {
		last = nil
	}
	last = dispatch(last, req)
	if ok && cap(buf) <= keepBytes {
		spare = buf
	}
	if len(last) == 0 {
		return abi.Pack(0, 0)
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(last)))), uint32(len(last)))
}

//go:wasmimport toolshed host_call
func hostCallImport(opPtr unsafe.Pointer, opLen uint32, reqPtr unsafe.Pointer, reqLen uint32) int32

//go:wasmimport toolshed host_result
func hostResultImport(bufPtr unsafe.Pointer, bufLen uint32) int32

func hostCall(op string, req []byte) ([]byte, error) {
	if len(req) == 0 {
		req = []byte("{}")
	}
	n := hostCallImport(unsafe.Pointer(unsafe.StringData(op)), uint32(len(op)), unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)))
	if n < 0 {
		return nil, errHostRejected(op)
	}
	buf := make([]byte, max(n, 1))
	if got := hostResultImport(unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf))); got != n {
		return nil, errHostRejected(op)
	}
	return buf[:n], nil
}
