;; Class 5: sleeping past the deadline. toolshed_call asks WASI poll_oneoff
;; for a 60 s relative clock subscription (what a Go plugin's time.Sleep
;; does); the call must end at the plugin's timeout, not after 60 s.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    ;; The tool "ok" (its name starts at byte 9 of the request) returns at once.
    (if (i32.eq (i32.load8_u (i32.add (local.get 0) (i32.const 9))) (i32.const 111))
      (then (return (i64.const 0x1000000010))))
    ;; subscription at 1024: userdata 0, tag 0 (clock), clock id 1,
    ;; timeout 60e9 ns, precision 0, flags 0 (relative)
    (i32.store8 (i32.const 1032) (i32.const 0))
    (i32.store (i32.const 1040) (i32.const 1))
    (i64.store (i32.const 1048) (i64.const 60000000000))
    (i32.store16 (i32.const 1064) (i32.const 0))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 2560)))
    (i64.const 0x1000000010)))
