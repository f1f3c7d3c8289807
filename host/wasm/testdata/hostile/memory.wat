;; Class 9 (memory): memory.grow one page at a time up to the cap,
;; filling each new page. The host's RSS must stay near the cap, not a
;; multiple of it (growth by copying).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (local $p i32)
    ;; The tool "ok" (its name starts at byte 9 of the request) returns at once.
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 111))
      (then (return (i64.const 0x1000000010))))
    (block $done
      (loop $l
        (local.set $p (memory.grow (i32.const 1)))
        (br_if $done (i32.eq (local.get $p) (i32.const -1)))
        (memory.fill (i32.mul (local.get $p) (i32.const 65536)) (i32.const 1) (i32.const 65536))
        (br $l)))
    (i64.const 0x1000000010)))
