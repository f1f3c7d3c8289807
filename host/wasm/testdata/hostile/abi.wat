;; The smallest module CheckModule accepts: the ABI v1 exports and a
;; memory. checkmodule_test.go breaks one rule at a time by editing it.
(module
  (import "toolshed" "host_call" (func $host_call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param $size i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param $ptr i32) (param $len i32) (result i64) (i64.const 0))
  (func (export "toolshed_request_buffer") (result i64) (i64.const 0))
  (func (export "_initialize"))
)
