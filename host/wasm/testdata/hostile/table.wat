;; Class 6: table.grow outside the memory limit. The table declares no
;; maximum and toolshed_call grows it by 100 million elements (800 MB of
;; host memory in wazero). The module must be refused before it compiles.
(module
  (table $t 1 funcref)
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    ;; The tool "ok" (its name starts at byte 9 of the request) returns at once.
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 111))
      (then (return (i64.const 0x1000000010))))
    (drop (table.grow $t (ref.null func) (i32.const 100000000)))
    (i64.const 0x1000000010)))
