// Package procmem reads a process's memory figures from Linux's /proc,
// for tests and benchmarks that measure what the host costs: a "Name:  N
// kB" field of /proc/PID/status ("VmRSS", "VmHWM") or of
// /proc/self/smaps_rollup ("Pss").
package procmem

import (
	"os"
	"strconv"
	"strings"
)

// Field returns field name of the file at path (a status or smaps_rollup
// file) in bytes; ok is false where the file or the field is missing
// (another system, a process that has exited).
func Field(path, name string) (bytes int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, found := strings.CutPrefix(line, name+":")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// Self returns field name of /proc/self/status in bytes.
func Self(name string) (int64, bool) { return Field("/proc/self/status", name) }

// PSS returns this process's proportional set size in bytes (0 off
// Linux): a page shared by k mappings counts 1/k.
func PSS() uint64 {
	b, _ := Field("/proc/self/smaps_rollup", "Pss")
	return uint64(b)
}
