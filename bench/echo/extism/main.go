//go:build wasip1

// Command extism is the echo tool as an Extism plugin: a WebAssembly
// reactor whose export "echo" speaks Extism's extism:host/env imports
// directly (as a PDK does underneath), for the call-cost benchmark's
// Extism rows. Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	"encoding/json"

	"github.com/toolshed/toolshed/bench/echo"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(uint64) uint64

//go:wasmimport extism:host/env store_u64
func storeU64(uint64, uint64)

//go:wasmimport extism:host/env store_u8
func storeU8(uint64, uint32)

//go:wasmimport extism:host/env output_set
func outputSet(uint64, uint64)

//go:wasmimport extism:host/env error_set
func errorSet(uint64)

// input reads the input 8 bytes at a time, as the PDKs do.
func input() []byte {
	n := inputLength()
	b := make([]byte, n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		v := inputLoadU64(i)
		for k := range uint64(8) {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

// store copies b into a new block, 8 bytes at a time.
func store(b []byte) uint64 {
	p := alloc(uint64(len(b)))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		var v uint64
		for k := range 8 {
			v |= uint64(b[i+k]) << (8 * k)
		}
		storeU64(p+uint64(i), v)
	}
	for ; i < len(b); i++ {
		storeU8(p+uint64(i), uint32(b[i]))
	}
	return p
}

//go:wasmexport echo
func run() int32 {
	var a echo.Args
	if err := json.Unmarshal(input(), &a); err != nil {
		errorSet(store([]byte(err.Error())))
		return 1
	}
	out, _ := json.Marshal(a)
	outputSet(store(out), uint64(len(out)))
	return 0
}

func main() {}
