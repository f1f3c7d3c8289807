// Command testsummary reads "go test -json" on stdin and prints what a
// plain "go test" prints (each package's ok or FAIL line, the output of
// failing tests, build errors), then every skipped test with the reason it
// gave, so that a run says what it did not test. It exits 1 if anything
// failed. make test pipes the main module's tests through it:
//
//	go test -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of "go test -json" (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

// skip is one skipped test and its reason.
type skip struct{ pkg, test, reason string }

func summarize(in io.Reader, out io.Writer) int {
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	var skips []skip
	failed, events := false, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: go test's own message
			continue
		}
		events++
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Action == "output" && e.Test == "":
			// Package-level lines: "ok pkg 1.2s", "FAIL pkg", panics.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") && !strings.HasPrefix(e.Output, "--- ") {
				fmt.Fprint(out, e.Output)
			}
		case e.Action == "output":
			outputs[k] = append(outputs[k], e.Output)
		case e.Action == "fail" && e.Test != "":
			failed = true
			for _, l := range outputs[k] {
				fmt.Fprint(out, l)
			}
			delete(outputs, k)
		case e.Action == "fail":
			failed = true
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, reason(outputs[k])})
			delete(outputs, k)
		case e.Action == "pass":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary:", err)
		failed = true
	}
	if events == 0 { // go test did not run (its error went to stderr)
		fmt.Fprintln(out, "testsummary: no test events on stdin")
		failed = true
	}
	if len(skips) > 0 {
		sort.Slice(skips, func(i, j int) bool {
			if skips[i].pkg != skips[j].pkg {
				return skips[i].pkg < skips[j].pkg
			}
			return skips[i].test < skips[j].test
		})
		fmt.Fprintf(out, "\n%d tests skipped:\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(out, "  SKIP %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// reason is what a skipped test said: its output without the framework's
// "=== RUN" and "--- SKIP" lines, on one line.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
