package procmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "status")
	os.WriteFile(p, []byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t1024 kB\nBad:\tlots kB\n"), 0o644)
	for _, c := range []struct {
		name string
		want int64
		ok   bool
	}{{"VmHWM", 2 << 20, true}, {"VmRSS", 1 << 20, true}, {"Vm", 0, false}, {"Bad", 0, false}, {"Pss", 0, false}} {
		if got, ok := Field(p, c.name); got != c.want || ok != c.ok {
			t.Errorf("%s = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := Field(filepath.Join(t.TempDir(), "gone"), "VmRSS"); ok {
		t.Error("a missing file gave a figure")
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if rss, ok := Self("VmRSS"); !ok || rss <= 0 {
			t.Errorf("VmRSS of this process: %d, %v", rss, ok)
		}
	}
}
