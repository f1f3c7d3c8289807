package main

// The Extism twins of the hostile suite: the containment cases of
// TestHostile that apply to a plugin of the Extism ABI (deadline,
// initialiser, compile budget, memory, log quota, http policy), run the
// same way — the built binary, `toolshed call` on a folder holding the
// hostile plugin — with the same checks, plus the Extism ABI's own
// exposure: blocks the host holds for the plugin.
//
//	go test -count=1 -run '^TestHostileExtism$' -v ./cmd/toolshed -args -hostile-report

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// extism writes an Extism plugin: as e.plugin, with "abi": "extism" in
// place of abi_version and each tool running the export of its name.
func (e *hostileEnv) extism(name string, module []byte, limits map[string]int, caps map[string]any, tools ...string) {
	e.t.Helper()
	e.plugin(name+".json", name, module, limits, caps, tools...)
	path := filepath.Join(e.plugins, name+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatal(err)
	}
	delete(m, "abi_version")
	m["abi"] = "extism"
	for _, t := range m["tools"].([]any) {
		t.(map[string]any)["export"] = t.(map[string]any)["name"]
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// extismAttackWAT is an Extism module whose export "attack" runs body
// (which leaves an i32), with the extism:host/env functions it needs and
// a memory.
func extismAttackWAT(body, extra string) string {
	return `(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store64 (param i64 i64)))
  (import "extism:host/env" "log_info" (func $log (param i64)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "attack") (result i32) (local $p i64) (local $i i64)
  ` + body + `)
  ` + extra + `)`
}

// extismBodyModule is an Extism module, in binary, whose export "attack"
// has the given body (then returns 0): for bodies too large for the text
// format's tools.
func extismBodyModule(body []byte) []byte {
	var m []byte
	m = append(m, 0, 'a', 's', 'm', 1, 0, 0, 0)
	section := func(id byte, content []byte) {
		m = append(m, id)
		m = appendULEB(m, uint64(len(content)))
		m = append(m, content...)
	}
	// Types: 0 () -> i32, 1 (i64 i64) -> ().
	section(1, []byte{2, 0x60, 0, 1, 0x7f, 0x60, 2, 0x7e, 0x7e, 0})
	var im []byte
	im = append(im, 1)
	for _, s := range []string{"extism:host/env", "output_set"} {
		im = appendULEB(im, uint64(len(s)))
		im = append(im, s...)
	}
	section(2, append(im, 0, 1))
	section(3, []byte{1, 0})
	section(5, []byte{1, 0, 1})
	ex := []byte{2, 6, 'a', 't', 't', 'a', 'c', 'k', 0, 1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0}
	section(7, ex)
	code := append(append([]byte{0}, body...), 0x41, 0, 0x0b) // no locals; body; i32.const 0
	section(10, append(appendULEB([]byte{1}, uint64(len(code))), code...))
	return m
}

// extismCase is moduleCase for an Extism module.
func extismCase(class, name, attack string, module func(e *hostileEnv) []byte, limits map[string]int,
	within time.Duration, maxPeakMiB float64, want string) hostileCase {
	return hostileCase{class: class, name: name, attack: attack, run: func(e *hostileEnv) (attackRun, string) {
		e.extism("hostile", module(e), limits, nil, "attack")
		r := e.call(generous(within), "", "attack", "{}")
		e.check(r.code != 0, r, "the attack succeeded")
		e.check(strings.Contains(r.stderr+r.stdout, want), r, "the error does not say %q", want)
		e.ended(r, within)
		e.check(r.peakMiB < maxPeakMiB, r, "peak RSS %.0f MiB, want < %.0f", r.peakMiB, maxPeakMiB)
		return r, firstLineOf(r.stderr+r.stdout) + overBudget(r, within)
	}}
}

var hostileExtismCases = []hostileCase{
	extismCase("5 sleep", "extism-wasi-sleep", "poll_oneoff with a 600 s clock under a 2 s timeout",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`
    (i32.store (i32.const 2064) (i32.const 1))
    (i64.store (i32.const 2072) (i64.const 600000000000))
    (drop (call $poll (i32.const 2048) (i32.const 3072) (i32.const 1) (i32.const 4000)))
    (i32.const 0)`, ""))
		}, map[string]int{"timeout_ms": 2000}, 2*time.Second+slack, basePeak, "timed out"),
	extismCase("7 init", "extism-init-loop", "an _initialize that loops, under a 1 s timeout",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`(i32.const 0)`, `(func (export "_initialize") (loop $l (br $l)))`))
		}, map[string]int{"timeout_ms": 1000}, 1*time.Second+slack, basePeak, "timed out"),
	extismCase("8 compile", "extism-nested-blocks", "100,000 nested blocks (a 300 KB module)",
		func(e *hostileEnv) []byte {
			return extismBodyModule(append(bytesRepeat([]byte{0x02, 0x40}, 100_000), bytesRepeat([]byte{0x0b}, 100_000)...))
		}, nil, 5*time.Second, basePeak, "compile budget"),
	extismCase("8 compile", "extism-huge-function", "one 12 MB function",
		func(e *hostileEnv) []byte { return extismBodyModule(bytesRepeat([]byte{0x41, 0x00, 0x1a}, 4_000_000)) },
		nil, 5*time.Second, basePeak+64, "compile budget"),
	extismCase("9 memory", "extism-recursion", "unbounded recursion",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`(drop (call $r (i32.const 0))) (i32.const 0)`,
				`(func $r (param i32) (result i32) (i32.add (call $r (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))`))
		}, map[string]int{"timeout_ms": 5000, "max_memory_mb": 64}, 5*time.Second+slack, basePeak+64, "trapped"),
	extismCase("9 memory", "extism-memory-grow", "memory.grow to the 64 MiB cap, touching every page",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`
    (local $q i32)
    (block $full (loop $grow
      (br_if $full (i32.eq (memory.grow (i32.const 16)) (i32.const -1)))
      (br $grow)))
    (block $end (loop $touch
      (br_if $end (i32.ge_u (local.get $q) (i32.mul (memory.size) (i32.const 65536))))
      (i32.store8 (local.get $q) (i32.const 1))
      (local.set $q (i32.add (local.get $q) (i32.const 4096)))
      (br $touch)))
    (unreachable)`, ""))
		}, map[string]int{"timeout_ms": 5000, "max_memory_mb": 64}, 5*time.Second+slack, basePeak+64*1.5, "trapped"),
	extismCase("9 memory", "extism-block-storm", "alloc 16 MiB host-side blocks without end, touching every page",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`
    (loop $more
      (local.set $p (call $alloc (i64.const 16777216)))
      (local.set $i (i64.const 0))
      (block $done (loop $touch
        (br_if $done (i64.ge_u (local.get $i) (i64.const 16777216)))
        (call $store (i64.add (local.get $p) (local.get $i)) (i32.const 1))
        (local.set $i (i64.add (local.get $i) (i64.const 4096)))
        (br $touch)))
      (br $more))
    (i32.const 0)`, ""))
		}, map[string]int{"timeout_ms": 5000, "max_memory_mb": 64}, 5*time.Second+slack, basePeak+64*1.5, "out of memory"),
	extismCase("9 memory", "extism-huge-block", "alloc one block of 1 TiB",
		func(e *hostileEnv) []byte {
			return wat(e.t, extismAttackWAT(`(drop (call $alloc (i64.const 1099511627776))) (i32.const 0)`, ""))
		}, map[string]int{"max_memory_mb": 64}, 5*time.Second, basePeak, "out of memory"),
	{class: "10 quotas", name: "extism-log-flood", attack: "log 512 KiB messages in a loop for 2 s", run: func(e *hostileEnv) (attackRun, string) {
		// Each message: a 512 KiB block of 'x' (the Toolshed ABI twin's fill).
		e.extism("hostile", wat(e.t, extismAttackWAT(`
    (loop $again
      (local.set $p (call $alloc (i64.const 524288)))
      (local.set $i (i64.const 0))
      (block $full (loop $fill
        (br_if $full (i64.ge_u (local.get $i) (i64.const 524288)))
        (call $store64 (i64.add (local.get $p) (local.get $i)) (i64.const 0x7878787878787878))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $fill)))
      (call $log (local.get $p))
      (br $again))
    (i32.const 0)`, "")), map[string]int{"timeout_ms": 2000}, map[string]any{"log": true}, "attack")
		g := e.grants(map[string]any{"plugins": map[string]any{"hostile": map[string]any{"log": true}}})
		e.env = append(e.env, "TOOLSHED_DEBUG=1") // every log line reaches stderr
		r := e.call(generous(2*time.Second+slack), g, "attack", "{}")
		e.ended(r, 2*time.Second+slack)
		e.check(len(r.stderr) < 256<<10, r, "%d bytes of log", len(r.stderr))
		return r, fmt.Sprintf("%s; %d KiB of log", firstLineOf(lastLines(r.stderr)), len(r.stderr)>>10) + overBudget(r, 2*time.Second+slack)
	}},
	{class: "3 network", name: "extism-http-private", attack: "http_request to a loopback server whose origin is granted, private addresses not",
		run: func(e *hostileEnv) (attackRun, string) { return extismHTTPCase(e, false) }},
	{class: "3 network", name: "extism-http-redirect", attack: "http_request to a granted origin that redirects to another",
		run: func(e *hostileEnv) (attackRun, string) { return extismHTTPCase(e, true) }},
}

// extismHTTPCase: the Go fixture's fetch export against loopback servers;
// the request (or the redirect) is refused before it reaches the server
// it was not granted, and the call is a tool error saying so.
func extismHTTPCase(e *hostileEnv, redirect bool) (attackRun, string) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer target.Close()
	first := target
	if redirect {
		first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/", http.StatusFound)
		}))
		defer first.Close()
	}
	e.extism("hostile", goExtismModule(e.t), map[string]int{"timeout_ms": 5000}, map[string]any{"http": []string{"*"}}, "fetch")
	// The tool takes its URL as text.
	path := filepath.Join(e.plugins, "hostile.json")
	b, _ := os.ReadFile(path)
	b = []byte(strings.Replace(string(b), `"export": "fetch"`, `"export": "fetch", "input": "text:url"`, 1))
	b = []byte(strings.Replace(string(b), `"parameters": {
        "type": "object"
      }`, `"parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}`, 1))
	os.WriteFile(path, b, 0o644)
	g := e.grants(map[string]any{"plugins": map[string]any{"hostile": map[string]any{
		"http": map[string]any{"allow": []string{first.URL}, "allow_private": redirect}}}})
	want := "private, loopback or link-local: refused"
	if redirect {
		want = "origin not allowed"
	}
	r := e.call(generous(5*time.Second), g, "fetch", fmt.Sprintf(`{"url": %q}`, target.URL+"/"))
	if redirect {
		r = e.call(generous(5*time.Second), g, "fetch", fmt.Sprintf(`{"url": %q}`, first.URL+"/"))
	}
	e.check(r.code == 3 && strings.Contains(r.stdout+r.stderr, want), r, "want exit 3 and %q", want)
	e.check(reached.Load() == 0, r, "the refused server was reached %d times", reached.Load())
	return r, firstLineOf(r.stdout + r.stderr)
}

func bytesRepeat(b []byte, n int) []byte { return []byte(strings.Repeat(string(b), n)) }

// TestHostileExtism runs the Extism twins through the built binary.
func TestHostileExtism(t *testing.T) {
	bin := hostileBinary(t)
	var rows []hostileRow
	for _, c := range hostileExtismCases {
		t.Run(c.name, func(t *testing.T) {
			e := newHostileEnv(t, bin)
			r, outcome := c.run(e)
			rows = append(rows, hostileRow{c.class, c.attack, outcome, r.took, r.peakMiB})
		})
	}
	if *hostileReport || *hostileBin != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "| class | attack (Extism ABI) | outcome | time | peak RSS |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f MiB |\n", r.class, r.attack, r.outcome, r.took.Round(time.Millisecond), r.peakMiB)
		}
		fmt.Println(b.String())
	}
}
