// Command badbuf offers a request buffer (toolshed_request_buffer) that
// lies outside its memory: the host must refuse the instance rather than
// write a request there.
package main

//go:wasmexport toolshed_abi_version
func abiVersion() uint32 { return 1 }

//go:wasmexport toolshed_request_buffer
func requestBuffer() uint64 { return 0xFFFFF000<<32 | 0x2000 } // past the end, and wraps 32 bits

//go:wasmexport toolshed_alloc
func alloc(n uint32) uint32 { return 0 }

//go:wasmexport toolshed_call
func call(p, n uint32) uint64 { return 0 }

func main() {}
