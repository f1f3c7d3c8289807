package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// reloadResult is the hot-reload test's figure, as it printed it.
type reloadResult struct {
	Command string
	Drops   int
	P50     time.Duration
	Max     time.Duration
	Err     string // the test failed or printed no figure
}

var reloadLine = regexp.MustCompile(`drop-to-searchable over (\d+) drops: p50 (\S+), max (\S+)`)

// reloadLatency runs host/catalog's TestReloadLatency in the main module
// (root): a plugin unit is written into a watched directory, and the time
// until the live catalog's search finds its tool is measured, drops times.
func reloadLatency(root string, drops int) reloadResult {
	args := []string{"test", "-count=1", "-run", "^TestReloadLatency$", "-v", "./host/catalog", "-args", "-drops", fmt.Sprint(drops)}
	r := reloadResult{Command: fmt.Sprintf("go test -count=1 -run '^TestReloadLatency$' -v ./host/catalog -args -drops %d", drops)}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if m := reloadLine.FindSubmatch(out); m != nil {
		fmt.Sscan(string(m[1]), &r.Drops)
		r.P50, _ = time.ParseDuration(string(m[2]))
		r.Max, _ = time.ParseDuration(string(m[3]))
	}
	if err != nil || r.P50 == 0 {
		r.Err = fmt.Sprintf("%v: %s", err, lastLines(out, 5))
	}
	return r
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// machine says where the figures were measured.
type machine struct {
	CPU, OS            string
	CPUs, GOMAXPROCS   int
	Go                 string
	Bleve, Wazero, Gse string
	MemTotal           string
}

func describeMachine() machine {
	m := machine{OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		fmt.Sscan(strings.TrimSuffix(kb, " kB"), &n)
		m.MemTotal = fmt.Sprintf("%.1f GiB", n/(1<<20))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/blevesearch/bleve/v2":
				m.Bleve = d.Version
			case "github.com/tetratelabs/wazero":
				m.Wazero = d.Version
			case "github.com/go-ego/gse":
				m.Gse = d.Version
			}
		}
	}
	return m
}

func procField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fmtDur prints a duration with three significant digits in a fitting unit.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d >= 10*time.Microsecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	default:
		return fmt.Sprintf("%.1f µs", float64(d)/1e3)
	}
}
