//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/toolshed/toolshed/sdk/abi"
)

// The request buffer (abi.ExportRequestBuffer) is allocated once and handed
// to the host, which writes each request that fits there and calls
// toolshed_call on it directly: a warm call is then one export call, not
// two. Larger requests go through toolshed_alloc. Buffers handed to the
// host stay referenced here so the garbage collector keeps them: the
// request buffer for the instance's life, an allocated one until its call,
// the result until the next call. The allocated request buffer and the
// result are reused from call to call (the ABI allows it); buffers over
// keepMax are let go after use.
var (
	reqBuf  []byte
	pending = map[uint32][]byte{}
	spare   []byte // a request buffer no longer handed out
	last    []byte
)

const (
	keepMax    = 64 << 10
	reqBufSize = 16 << 10
)

//go:wasmexport toolshed_abi_version
func exportVersion() uint32 { return abi.Version }

//go:wasmexport toolshed_request_buffer
func exportRequestBuffer() uint64 {
	if reqBuf == nil {
		reqBuf = make([]byte, reqBufSize)
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(reqBuf)))), uint32(len(reqBuf)))
}

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
	var req []byte
	if reqBuf != nil && ptr == uint32(uintptr(unsafe.Pointer(unsafe.SliceData(reqBuf)))) {
		if int(length) <= len(reqBuf) {
			req = reqBuf[:length]
		}
	} else if buf, ok := pending[ptr]; ok {
		delete(pending, ptr)
		if int(length) <= len(buf) {
			req = buf[:length]
		}
		if cap(buf) <= keepMax {
			spare = buf
		}
	}
	if cap(last) > keepMax {
		last = nil
	}
	// dispatch copies what it keeps of req (the decoded arguments' strings)
	// out of it, so the buffer can be written again by the next call.
	last = dispatch(last, req)
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
