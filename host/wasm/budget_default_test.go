package wasm

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultBudgetShare: the default leaves the rest of the server at
// least a quarter of the memory and 512 MiB, and never goes under a
// quarter of it.
func TestDefaultBudgetShare(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{0, 0}, {1 << 30, 512 << 20}, {16 << 30, 12 << 30}, {512 << 20, 128 << 20},
	} {
		if got := budgetOf(c.limit); got != c.want {
			t.Errorf("budgetOf(%d MiB) = %d MiB, want %d MiB", c.limit>>20, got>>20, c.want>>20)
		}
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"max": "max\n", "num": "1073741824\n", "bad": "lots\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	if v, err := readLimit(filepath.Join(dir, "max")); err != nil || v != 0 {
		t.Errorf("max: %d %v", v, err)
	}
	if v, err := readLimit(filepath.Join(dir, "num")); err != nil || v != 1<<30 {
		t.Errorf("a number: %d %v", v, err)
	}
	if _, err := readLimit(filepath.Join(dir, "bad")); err == nil {
		t.Error("garbage read as a limit")
	}
	if DefaultMemoryBudget() < 0 {
		t.Error("a negative default")
	}
}
