package wasmcheck

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func TestSplitGo(t *testing.T) {
	path := os.Getenv("SPLIT_WASM")
	if path == "" {
		t.Skip()
	}
	code, _ := os.ReadFile(path)
	st, err := Check(code, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gap := range []int{0, 8, 64, 512, 4096, 65536} {
		img, err := Split(code, st, gap)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range img.Segments {
			n += len(s.Data)
		}
		t.Logf("gap %d: %d -> %d segments, %d bytes, module %d -> %d, globals %v", gap, img.SegmentsBefore, len(img.Segments), n, len(code), len(img.Module), img.Globals)
	}
	_ = bytes.Equal
	_ = errors.Is
}
