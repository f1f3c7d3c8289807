// Command noabi lacks the ABI version export.
package main

//go:wasmexport toolshed_alloc
func alloc(n uint32) uint32 { return 0 }

//go:wasmexport toolshed_call
func call(p, n uint32) uint64 { return 0 }

func main() {}
