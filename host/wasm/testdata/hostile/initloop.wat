;; Class 7: an initialiser that never returns. The start function spins
;; for ever; each instantiation must end at the plugin's timeout, and the
;; plugin must not hold every instantiation slot while it does.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func $spin (loop $l (br $l)))
  (start $spin)
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (i64.const 0x1000000010)))
