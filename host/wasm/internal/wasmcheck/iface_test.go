package wasmcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// abiModule is the smallest module with the ABI's shape: a type
// () -> i32, a function of it exported as toolshed_abi_version, and a
// memory exported as memory (as wat2wasm writes it).
var abiModule = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x05\x01\x60\x00\x01\x7f" + // type 0: () -> i32
	"\x03\x02\x01\x00" + // function 0: type 0
	"\x05\x03\x01\x00\x01" + // memory 0: min 1
	"\x07\x21\x02" + // two exports
	"\x14toolshed_abi_version\x00\x00" +
	"\x06memory\x02\x00" +
	"\x0a\x06\x01\x04\x00\x41\x01\x0b") // body: i32.const 1

func TestReadInterface(t *testing.T) {
	in, err := ReadInterface(abiModule)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := in.Export("toolshed_abi_version")
	if !ok || e.Func == nil || len(e.Func.Params) != 0 || len(e.Func.Results) != 1 || e.Func.Results[0] != I32 {
		t.Fatalf("export %+v", e)
	}
	if m, ok := in.Export("memory"); !ok || m.Kind != 2 || m.Func != nil {
		t.Fatalf("memory %+v", m)
	}
	// Every prefix of the module is refused or read, never a panic: one
	// that ends between two sections is read (the code is not needed),
	// one that cuts a section is refused.
	boundary := map[int]bool{8: true, 15: true, 19: true, 24: true, 59: true}
	for n := 0; n < len(abiModule); n++ {
		if _, err := ReadInterface(abiModule[:n]); (err == nil) != boundary[n] {
			t.Errorf("prefix of %d bytes: err = %v", n, err)
		}
	}
}

// FuzzReadInterface: any bytes are refused or read, without a panic and
// without reading past them; the seeds are the module above and the
// bundled plugins when built.
func FuzzReadInterface(f *testing.F) {
	f.Add(abiModule)
	files, _ := filepath.Glob("../../../../plugin-manifests/*.wasm")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		in, err := ReadInterface(code)
		if err == nil && in == nil {
			t.Fatal("nil interface without an error")
		}
	})
}
