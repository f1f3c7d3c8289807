package wasm_test

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkExtismWarmCall: a warm call of an Extism plugin's export
// (the Go fixture's greet: input read byte by byte, output stored).
func BenchmarkExtismWarmCall(b *testing.B) {
	snap := goExtismSnap(b, "")
	h, _ := newHost(b, nil)
	s := h.NewSession()
	defer s.Close(context.Background())
	tool, _ := snap.Tool("greet")
	args := json.RawMessage(`{"text": "benchmark"}`)
	if _, err := s.Call(context.Background(), tool, args); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Call(context.Background(), tool, args); err != nil {
			b.Fatal(err)
		}
	}
}
