package wasm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// stderrStartWAT is an ABI v1 module whose start function writes msg to
// stderr (fd 2) and traps, as a Go plugin that panics in init does.
func stderrStartWAT(msg string) string {
	return fmt.Sprintf(`(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\00\01\00\00\%02x\00\00\00")  ;; one iovec: 256, len
  (data (i32.const 256) %q)
  (func $start (drop (call $w (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 64))) (unreachable))
  (start $start)
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64) (i64.const 0)))`, len(msg), msg)
}

// A module that traps at start fails Instantiate (what plugins validate
// --compile runs), not only its first call, and the error carries what it
// wrote to stderr; a call says the same.
func TestInstantiateStartPanic(t *testing.T) {
	msg := "panic: sdk: tool \"greet\" registered twice\n"
	snap := writePlugins(t, spec{name: "twice", module: wasmbuild.WAT(t, []byte(stderrStartWAT(msg))), tools: []string{"greet"}})
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	pl, err := h.Plugin(snap.Plugins[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Compile(context.Background()); err != nil {
		t.Fatalf("the module compiles: %v", err)
	}
	err = pl.Instantiate(context.Background())
	if err == nil || !strings.Contains(err.Error(), "trapped") || !strings.Contains(err.Error(), `stderr ended with: panic: sdk: tool "greet" registered twice`) {
		t.Fatalf("Instantiate: %v", err)
	}
	s := h.NewSession()
	defer s.Close(context.Background())
	if _, err := call(t, s, snap, "greet", `{}`); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("call: %v", err)
	}
}

// A module that grows its memory until a grow fails and then traps (what
// the Go runtime does when it runs out) is reported out of memory, not as
// a bare unreachable.
func TestTrapOutOfMemory(t *testing.T) {
	module := wasmbuild.WAT(t, []byte(`(module
  (memory (export "memory") 1)
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (block $full (loop $grow
      (br_if $full (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
      (br $grow)))
    (unreachable)))`))
	plain := wasmbuild.WAT(t, []byte(`(module
  (memory (export "memory") 1)
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64) (unreachable)))`))
	snap := writePlugins(t, spec{name: "greedy", module: module, tools: []string{"grow"}, limits: `{"max_memory_mb": 4}`},
		spec{name: "plain", module: plain, tools: []string{"trap"}})
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	s := h.NewSession()
	defer s.Close(context.Background())
	_, err := call(t, s, snap, "grow", `{}`)
	if err == nil || !strings.Contains(err.Error(), "out of memory (the plugin's memory is limited to 4 MiB)") || !strings.Contains(err.Error(), "trapped") {
		t.Fatalf("grow: %v", err)
	}
	// A trap with memory to spare is not called out of memory.
	if _, err := call(t, s, snap, "trap", `{}`); err == nil || strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("trap: %v", err)
	}
}
