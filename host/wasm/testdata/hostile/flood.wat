;; Class 10: log and artifact floods. Tool "logs" sends 2,000 log
;; messages of 4,000 bytes; tool "artifacts" stores 20 artifacts of
;; 576 KiB. Both must stop at the quotas with an error to the plugin.
(module
  (import "toolshed" "host_call" (func $host (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 40)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 64) "log")
  (data (i32.const 80) "artifact.put")
  (data (i32.const 8192) "{\"message\":\"")
  (data (i32.const 16384) "{\"name\":\"a\",\"data\":\"")
  (func (export "toolshed_call") (param i32 i32) (result i64)
    (local $i i32)
    ;; The tool "ok" (its name starts at byte 9 of the request) returns at once.
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 111))
      (then (return (i64.const 0x1000000010))))
    ;; log request at 8192: {"message":" + 4000 x + "}
    (memory.fill (i32.const 8204) (i32.const 120) (i32.const 4000))
    (i32.store16 (i32.const 12204) (i32.const 0x7d22))
    ;; artifact request at 16384: {"name":"a","data":" + 768 KiB of A (base64 of zeros) + "}
    (memory.fill (i32.const 16404) (i32.const 65) (i32.const 786432))
    (i32.store16 (i32.const 802836) (i32.const 0x7d22))
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 108)) ;; "logs"
      (then
        (loop $l
          (drop (call $host (i32.const 64) (i32.const 3) (i32.const 8192) (i32.const 4014)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (i32.const 2000)))))
      (else
        (loop $l
          (drop (call $host (i32.const 80) (i32.const 12) (i32.const 16384) (i32.const 786454)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (i32.const 20))))))
    (i64.const 0x1000000010)))
