// Command hostile is a deliberately bad plugin: each tool misbehaves in
// one way, talking the raw ABI (no SDK) so nothing softens the blow.
package main

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"unsafe"
)

var (
	pending = map[uint32][]byte{}
	last    []byte
	hoard   [][]byte
	calls   int
)

//go:wasmexport toolshed_abi_version
func abiVersion() uint32 { return 1 }

//go:wasmexport toolshed_alloc
func alloc(n uint32) uint32 {
	b := make([]byte, max(n, 1))
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pending[p] = b
	return p
}

func ret(b []byte) uint64 {
	last = b
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

func text(s string) uint64 {
	b, _ := json.Marshal(map[string]any{"content": s})
	return ret(b)
}

func recurse(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	return recurse(n+1) + int(pad[0])
}

//go:wasmexport toolshed_call
func call(p, n uint32) uint64 {
	var req struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	json.Unmarshal(pending[p][:n], &req)
	delete(pending, p)
	calls++
	switch req.Tool {
	case "ok":
		return text("fine")
	case "counter": // state within one instance
		return text(strings.Repeat("|", calls))
	case "loop":
		for {
		}
	case "memory":
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	case "recursion":
		return text(string(rune(recurse(0))))
	case "panic":
		panic("boom")
	case "oob":
		return 0xFFFF0000<<32 | 16 // pointer past the end of memory
	case "wrap":
		return 0xFFFFFFF0<<32 | 0x20 // pointer + length wraps around 32 bits
	case "huge":
		return ret(make([]byte, 8<<20))
	case "badjson":
		return ret([]byte(`{"content": "unterminated`))
	case "extrafield":
		return ret([]byte(`{"content": "x", "secret": 1}`))
	case "files":
		_, err := os.ReadFile("/etc/passwd")
		entries, err2 := os.ReadDir("/")
		return text("read: " + errString(err) + "; readdir: " + errString(err2) + "; entries: " + itoa(len(entries)))
	case "env":
		return text("env: " + itoa(len(os.Environ())) + " vars; HOME=" + os.Getenv("HOME") + "; args: " + itoa(len(os.Args)))
	case "socket":
		_, err := net.Dial("tcp", "127.0.0.1:80")
		return text("dial: " + errString(err))
	case "print":
		for i := 0; i < 1000; i++ {
			os.Stdout.WriteString("line of plugin output that goes on for a while ....................\n")
		}
		return text("printed")
	}
	return text("unknown tool " + req.Tool)
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func main() {}
