// Command abi2 claims an ABI version this host does not speak.
package main

//go:wasmexport toolshed_abi_version
func abiVersion() uint32 { return 2 }

//go:wasmexport toolshed_alloc
func alloc(n uint32) uint32 { return 0 }

//go:wasmexport toolshed_call
func call(p, n uint32) uint64 { return 0 }

func main() {}
