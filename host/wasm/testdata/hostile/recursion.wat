;; Class 9 (stack): unbounded recursion until the engine's stack ceiling
;; traps. The host's RSS while it does must stay within the stated bound.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func $r (param i64) (result i64)
    (i64.add (call $r (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    ;; The tool "ok" (its name starts at byte 9 of the request) returns at once.
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 111))
      (then (return (i64.const 0x1000000010))))
    (drop (call $r (i64.const 0)))
    (i64.const 0x1000000010)))
