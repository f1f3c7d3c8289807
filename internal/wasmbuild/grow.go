package wasmbuild

import (
	"fmt"
	"strings"
)

// GrowWAT is the text of a plugin (ABI v1, one page of memory to start)
// whose every call grows its linear memory by mib MiB, writes a byte on
// each new page so that the memory is committed, keeps it and returns
// "ok"; a growth that is refused traps. Tests of memory limits use it.
func GrowWAT(mib int) string {
	return fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (local $p i32) (local $end i32)
    (local.set $p (memory.grow (i32.const %d)))
    (if (i32.eq (local.get $p) (i32.const -1)) (then unreachable))
    (local.set $p (i32.mul (local.get $p) (i32.const 65536)))
    (local.set $end (i32.add (local.get $p) (i32.const %d)))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (i32.store8 (local.get $p) (i32.const 1))
      (local.set $p (i32.add (local.get $p) (i32.const 4096)))
      (br $l)))
    (i64.const 16)))`, mib<<4, mib<<20)
}

// FixedWAT is GrowWAT's plugin with mib MiB of linear memory from the
// start and calls that do not grow it: its instances' size is known
// before they are made (tests of the memory budget's waits use it).
func FixedWAT(mib int) string {
	return strings.Replace(GrowWAT(0), `(memory (export "memory") 1)`, fmt.Sprintf(`(memory (export "memory") %d)`, mib<<4), 1)
}
