package wasm

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// DefaultMemoryBudget is the plugin memory budget when none is set: a
// share of the memory this process may use (its cgroup's memory.max,
// else the machine's physical memory) that leaves the rest of the server
// room: the limit less a quarter of it, and less at least 512 MiB, but
// never under a quarter of it. It is 0 (no budget) when neither can be
// read.
func DefaultMemoryBudget() int64 { return budgetOf(processMemoryLimit()) }

func budgetOf(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return max(limit-max(limit/4, 512<<20), limit/4)
}

// processMemoryLimit is the least memory.max (cgroup v2) or
// memory.limit_in_bytes (v1) from this process's cgroup up, else
// MemTotal of /proc/meminfo; 0 when none is known.
func processMemoryLimit() int64 {
	limit := physicalMemory()
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			var base, file string
			switch {
			case parts[0] == "0" && parts[1] == "":
				base, file = "/sys/fs/cgroup", "memory.max"
			case strings.Contains(","+parts[1]+",", ",memory,"):
				base, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
			default:
				continue
			}
			for dir := path.Clean("/" + parts[2]); ; dir = path.Dir(dir) {
				if v, err := readLimit(path.Join(base, dir, file)); err == nil && v > 0 && (limit == 0 || v < limit) {
					limit = v
				}
				if dir == "/" {
					break
				}
			}
		}
	}
	return limit
}

// readLimit reads a cgroup limit file: a number of bytes, or "max".
func readLimit(name string) (int64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// physicalMemory is MemTotal, in bytes; 0 off Linux.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
