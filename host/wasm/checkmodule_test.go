package wasm_test

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
)

// TestCheckModule breaks each rule of CheckModule once, on a module that
// otherwise passes.
func TestCheckModule(t *testing.T) {
	if err := wasm.CheckModule(wat(t, "abi")); err != nil {
		t.Fatalf("the minimal ABI module: %v", err)
	}
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"no call", []string{`(export "toolshed_call")`, ``}, "does not export toolshed_call: it is not a Toolshed ABI v1 plugin"},
		{"no version", []string{`(export "toolshed_abi_version")`, ``}, "does not export toolshed_abi_version"},
		{"alloc takes i64", []string{`(param $size i32)`, `(param $size i64)`}, "export toolshed_alloc has the wrong signature (want (i32) -> i32)"},
		{"call returns i32", []string{`(result i64) (i64.const 0))
  (func (export "toolshed_request_buffer")`, `(result i32) (i32.const 0))
  (func (export "toolshed_request_buffer")`}, "export toolshed_call has the wrong signature (want (i32, i32) -> i64)"},
		{"version takes a parameter", []string{`(export "toolshed_abi_version") (result i32)`, `(export "toolshed_abi_version") (param i32) (result i32)`}, "toolshed_abi_version has the wrong signature (want () -> i32)"},
		{"request buffer returns i32", []string{`(export "toolshed_request_buffer") (result i64) (i64.const 0)`, `(export "toolshed_request_buffer") (result i32) (i32.const 0)`}, "toolshed_request_buffer has the wrong signature (want () -> i64)"},
		{"exported memory is a global", []string{`(memory (export "memory") 1)`, `(memory 1) (global (export "memory") i32 (i32.const 0))`}, "exports no memory"},
		{"a command", []string{`(export "_initialize")`, `(export "_start")`}, "module is a command (it exports _start)"},
		{"an unknown import", []string{`(import "toolshed" "host_call"`, `(import "env" "host_call"`}, "module imports env.host_call, which this host does not provide"},
		{"an imported memory", []string{`(memory (export "memory") 1)`, `(import "env" "mem" (memory 1)) (export "memory" (memory 0))`}, "module imports env.mem, which is not a function"},
		{"call is a global", []string{`(func (export "toolshed_call") (param $ptr i32) (param $len i32) (result i64) (i64.const 0))`, `(global (export "toolshed_call") i64 (i64.const 0))`}, "export toolshed_call has the wrong signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wasm.CheckModule(wat(t, "abi", tt.edits...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ...%s...", err, tt.want)
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x02\x00\x00\x00"), []byte("not wasm at all"),
		[]byte("\x00asm\x01\x00\x00\x00\x07\x05\x01\x01a\x00\x09"), // export of function 9 in a module with none
		[]byte("\x00asm\x01\x00\x00\x00\x01\xff\xff\xff\xff\x0f"),  // a section longer than the module
	} {
		if err := wasm.CheckModule(bad); err == nil || !strings.Contains(err.Error(), "not valid WebAssembly") {
			t.Errorf("CheckModule(%q) = %v, want not valid WebAssembly", bad, err)
		}
	}
}
