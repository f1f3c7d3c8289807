package main

// The hostile suite: each class of misbehaviour docs/SECURITY.md lists,
// tried through the real path — the built binary, `toolshed call` (or
// `search`, `plugins validate`) on a plugin folder holding the hostile
// plugin, as an operator would run it — and the outcome checked: the
// attack is stopped (the process ends by itself, well before a deadline a
// machine ten times slower meets), the process's peak RSS stays bounded,
// the database is byte-identical, no file is created. Times are measured,
// not asserted: the report marks a run over its budget.
//
//	go test -count=1 -run '^TestHostile$' -v ./cmd/toolshed -args -hostile-report
//
// prints the table of docs/SECURITY.md (time to fail, peak RSS of the whole
// process). -hostile-bin PATH runs the same attacks against another build
// (an older one, to measure "before"): then nothing is asserted, and every
// attack is killed after -hostile-kill.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

var (
	hostileReport = flag.Bool("hostile-report", false, "print the hostile suite's table")
	hostileBin    = flag.String("hostile-bin", "", "run the hostile suite against this binary and assert nothing")
	hostileKill   = flag.Duration("hostile-kill", 30*time.Second, "kill an attack after this long")
)

// attackRun is one run of the binary: what it printed, how it ended, how
// long it took and its peak RSS.
type attackRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
	peakMiB        float64
	killed         bool
}

func (r attackRun) outcome() string {
	if r.killed {
		return "still running: killed"
	}
	return fmt.Sprintf("exit %d", r.code)
}

// runBin runs bin with args in dir under env, killed after kill.
func runBin(t *testing.T, bin, dir string, env []string, kill time.Duration, args ...string) attackRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The peak RSS is the process's VmHWM, read until it exits (rusage's
	// maxrss would count the test process the child was forked from).
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var r attackRun
	hwm := func() {
		if kib := procHWM(status); kib > 0 {
			r.peakMiB = max(r.peakMiB, float64(kib)/1024)
		}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(kill)
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			hwm()
		case <-deadline:
			hwm()
			cmd.Process.Kill()
			<-done
			r.killed = true
			break wait
		}
	}
	r.took = time.Since(start)
	r.code = cmd.ProcessState.ExitCode()
	r.stdout, r.stderr = out.String(), errb.String()
	return r
}

// procHWM reads the high-water mark of a process's RSS, in KiB (0 when it
// cannot be read, e.g. the process has exited).
func procHWM(status string) int {
	b, _ := procmem.Field(status, "VmHWM")
	return int(b >> 10)
}

// hostileEnv is a plugin folder, a data directory and a grants file for
// one attack, with the binary under test.
type hostileEnv struct {
	t       *testing.T
	bin     string
	root    string // temporary root
	plugins string // plugin folder
	data    string // XDG_DATA_HOME
	env     []string
	measure bool // a foreign binary: run and report, assert nothing
}

func newHostileEnv(t *testing.T, bin string) *hostileEnv {
	root := t.TempDir()
	e := &hostileEnv{t: t, bin: bin, root: root, plugins: filepath.Join(root, "plugins"), data: filepath.Join(root, "data"),
		measure: *hostileBin != ""}
	for _, d := range []string{e.plugins, e.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.env = []string{"XDG_DATA_HOME=" + e.data, "XDG_CACHE_HOME=" + filepath.Join(root, "cache"), "TOOLSHED_PLUGINS=", "TOOLSHED_CONFIG="}
	return e
}

// plugin writes NAME.json (or file) and its module into the folder.
func (e *hostileEnv) plugin(file, name string, module []byte, limits map[string]int, caps map[string]any, tools ...string) {
	e.t.Helper()
	sum := sha256.Sum256(module)
	wasmName := strings.TrimSuffix(file, ".json") + ".wasm"
	if err := os.WriteFile(filepath.Join(e.plugins, wasmName), module, 0o644); err != nil {
		e.t.Fatal(err)
	}
	var ts []map[string]any
	for _, tool := range tools {
		ts = append(ts, map[string]any{"name": tool, "description": "A tool of the hostile suite: " + tool + ".",
			"parameters": map[string]any{"type": "object"}})
	}
	m := map[string]any{"name": name, "version": "1.0.0", "abi_version": 1, "description": "hostile suite",
		"wasm": wasmName, "sha256": hex.EncodeToString(sum[:]), "tools": ts}
	if limits != nil {
		m["limits"] = limits
	}
	if caps != nil {
		m["capabilities"] = caps
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(e.plugins, file), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// grants writes the grants file and returns its path.
func (e *hostileEnv) grants(g map[string]any) string {
	e.t.Helper()
	b, _ := json.Marshal(g)
	path := filepath.Join(e.root, "grants.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *hostileEnv) run(kill time.Duration, args ...string) attackRun {
	if *hostileBin != "" {
		kill = *hostileKill
	}
	return runBin(e.t, e.bin, e.root, e.env, kill, args...)
}

// call runs `toolshed call` on the folder.
func (e *hostileEnv) call(kill time.Duration, grants, tool, args string) attackRun {
	a := []string{"call", "--plugins", e.plugins}
	if grants != "" {
		a = append(a, "--grants", grants)
	}
	return e.run(kill, append(a, tool, args)...)
}

// check fails the test with the run's output when ok is false (and only
// reports when measuring a foreign binary).
func (e *hostileEnv) check(ok bool, r attackRun, format string, args ...any) {
	e.t.Helper()
	if ok || e.measure {
		return
	}
	e.t.Errorf("%s\n%s in %v, peak %.0f MiB\nstdout: %s\nstderr: %s", fmt.Sprintf(format, args...), r.outcome(), r.took, r.peakMiB,
		clip(r.stdout), clip(r.stderr))
}

// generous is the kill deadline of an attack whose time budget is budget:
// ten times the budget, for a machine ten times slower than the one the
// budgets were measured on, plus a cold compile's time. The test asserts
// the outcome (the attack was stopped: the process ended by itself); the
// time it took against its budget is the report's (-hostile-report).
func generous(budget time.Duration) time.Duration { return 10*budget + 30*time.Second }

// ended fails the test when the run had to be killed: the attack was not
// stopped by the limit meant to stop it.
func (e *hostileEnv) ended(r attackRun, budget time.Duration) {
	e.t.Helper()
	e.check(!r.killed, r, "not stopped: still running after %v (its budget is %v)", r.took.Round(time.Millisecond), budget)
}

// overBudget is the report's note for a run slower than its budget.
func overBudget(r attackRun, budget time.Duration) string {
	if r.took <= budget {
		return ""
	}
	return fmt.Sprintf(" (over its %v budget)", budget)
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// wat compiles WebAssembly text with wat2wasm (Debian's wabt; .ci/run
// installs it).
func wat(t *testing.T, src string) []byte { t.Helper(); return wasmbuild.WAT(t, []byte(src)) }

// abiWAT is a minimal ABI v1 plugin: imports, then the three exports, a
// memory, and toolshed_call's body (which leaves an i64 result). The
// result "ok" lies at 0; scratch starts at 4096.
func abiWAT(imports, memory, body, extra string) string {
	return `(module
  ` + imports + `
  ` + memory + `
  (data (i32.const 0) "{\"content\":\"ok\"}")
  (func (export "toolshed_abi_version") (result i32) (i32.const 1))
  (func (export "toolshed_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "toolshed_call") (param i32 i32) (result i64)
    ` + body + `)
  ` + extra + `
)`
}

// okResult is the i64 that points at the "ok" result.
const okResult = `(i64.const 16)` // pointer 0, length 16

// hostCallWAT: a module that calls host_call(op, request) in a loop until
// stopped, with the request built in memory at 8192: prefix, fill bytes of
// fill, suffix.
func hostCallWAT(op, prefix string, fill byte, n int, suffix string, loop bool) string {
	imports := `(import "toolshed" "host_call" (func $hc (param i32 i32 i32 i32) (result i32)))`
	pre, suf := watString(prefix), watString(suffix)
	body := fmt.Sprintf(`
    (memory.fill (i32.const %d) (i32.const %d) (i32.const %d))
    (block $done (loop $again
      (drop (call $hc (i32.const 4096) (i32.const %d) (i32.const 8192) (i32.const %d)))
      (br_if $again (i32.const %d))))
    %s`, 8192+len(prefix), fill, n, len(op), len(prefix)+n+len(suffix), b2i(loop), okResult)
	extra := fmt.Sprintf(`(data (i32.const 4096) %s)
  (data (i32.const 8192) %s)
  (data (i32.const %d) %s)`, watString(op), pre, 8192+len(prefix)+n, suf)
	pages := (8192+len(prefix)+n+len(suffix))/65536 + 2
	return abiWAT(imports, fmt.Sprintf(`(memory (export "memory") %d)`, pages), body, extra)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// watString quotes s as a WAT string.
func watString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			fmt.Fprintf(&b, `\%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// callBodyModule builds, byte by byte, an ABI v1 module whose toolshed_call
// has the given body (instructions only; the i64 result is appended), for
// shapes too large for text: deep nesting, huge functions.
func callBodyModule(body []byte) []byte {
	var m []byte
	m = append(m, 0, 'a', 's', 'm', 1, 0, 0, 0)
	section := func(id byte, content []byte) {
		m = append(m, id)
		m = appendULEB(m, uint64(len(content)))
		m = append(m, content...)
	}
	// Types: 0 () -> i32, 1 (i32) -> i32, 2 (i32 i32) -> i64.
	section(1, []byte{3, 0x60, 0, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7e})
	section(3, []byte{3, 0, 1, 2})
	section(5, []byte{1, 0, 1}) // one memory, min 1 page
	var ex []byte
	ex = append(ex, 4)
	for i, name := range []string{"toolshed_abi_version", "toolshed_alloc", "toolshed_call"} {
		ex = appendULEB(ex, uint64(len(name)))
		ex = append(ex, name...)
		ex = append(ex, 0, byte(i))
	}
	ex = append(ex, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0)
	section(7, ex)
	fn := func(code []byte) []byte {
		b := appendULEB(nil, uint64(len(code)+1))
		b = append(b, 0) // no locals
		return append(b, code...)
	}
	var code []byte
	code = append(code, 3)
	code = append(code, fn([]byte{0x41, 1, 0x0b})...)           // i32.const 1
	code = append(code, fn([]byte{0x41, 0x80, 0x08, 0x0b})...)  // i32.const 1024
	call := append(append([]byte(nil), body...), 0x42, 0, 0x0b) // i64.const 0
	code = append(code, fn(call)...)
	section(10, code)
	return m
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// hostileBinary builds the binary under test (or takes -hostile-bin).
func hostileBinary(t *testing.T) string {
	if *hostileBin != "" {
		return *hostileBin
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toolshed")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// hostileRow is one line of the report.
type hostileRow struct {
	class, attack, outcome string
	took                   time.Duration
	peakMiB                float64
}

// TestHostile runs every attack class through the built binary.
func TestHostile(t *testing.T) {
	bin := hostileBinary(t)
	var rows []hostileRow
	record := func(class, attack string, r attackRun, outcome string) {
		rows = append(rows, hostileRow{class, attack, outcome, r.took, r.peakMiB})
	}
	// The baseline: a harmless call's peak RSS, for reading the others.
	t.Run("baseline", func(t *testing.T) {
		e := newHostileEnv(t, bin)
		e.plugin("ok.json", "ok", wat(t, abiWAT("", `(memory (export "memory") 1)`, okResult, "")), nil, nil, "okTool")
		r := e.call(20*time.Second, "", "okTool", "{}")
		e.check(r.code == 0 && strings.TrimSpace(r.stdout) == "ok", r, "a harmless call fails")
		record("—", "a harmless plugin call", r, strings.TrimSpace(r.stdout))
	})
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			e := newHostileEnv(t, bin)
			r, outcome := c.run(e)
			record(c.class, c.attack, r, outcome)
		})
	}
	if *hostileReport || *hostileBin != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "| class | attack | outcome | time | peak RSS |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f MiB |\n", r.class, r.attack, r.outcome, r.took.Round(time.Millisecond), r.peakMiB)
		}
		fmt.Println(b.String())
	}
}

// hostileCase is one attack: it sets up e, runs the binary, checks the
// outcome and says it in a few words.
type hostileCase struct {
	class, name, attack string
	run                 func(e *hostileEnv) (attackRun, string)
}

var errNoFile = errors.New("no file")

// fileSum is the sha256 of a file, or errNoFile.
func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", errNoFile
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// firstLineOf is the first non-empty line of s, clipped.
func firstLineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 110 {
				l = l[:110] + "…"
			}
			return strings.ReplaceAll(l, "|", "\\|")
		}
	}
	return ""
}
