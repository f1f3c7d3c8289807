package wasm

import (
	"context"
	"testing"
	"time"
)

// BenchmarkBudgetTake: what the budget costs one instance made and
// closed (a reserve and its release) without a wait, and with one (the
// queue, no one waiting): under a microsecond, against the hundreds of
// microseconds of a session's first call (docs/BENCHMARKS.md).
func BenchmarkBudgetTake(b *testing.B) {
	for _, c := range []struct {
		name string
		wait time.Duration
	}{{"wait=0", 0}, {"wait=1m", time.Minute}} {
		b.Run(c.name, func(b *testing.B) {
			bg := newMemBudget(1<<30, 256<<20, c.wait, func(string, int64) {})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				a := bg.tenantAccount(context.Background(), "t")
				if err := a.reserve(ctx, 16<<20); err != nil {
					b.Fatal(err)
				}
				a.free()
			}
		})
	}
}

// BenchmarkBudgetWaitHandoff: one instance's room handed from a release
// to a waiter and back, two goroutines taking turns: the cost of a wait
// that is served.
func BenchmarkBudgetWaitHandoff(b *testing.B) {
	bg := newMemBudget(16<<20, 0, time.Minute, func(string, int64) {})
	ctx := context.Background()
	hold := bg.newAccount(true)
	if err := hold.reserve(ctx, 16<<20); err != nil {
		b.Fatal(err)
	}
	turn := make(chan *memAccount)
	go func() {
		for a := range turn {
			a.free()
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		a := bg.newAccount(true)
		turn <- hold // released on the other goroutine, while this one waits
		if err := a.reserve(ctx, 16<<20); err != nil {
			b.Fatal(err)
		}
		hold = a
	}
	close(turn)
	if st := bg.waits; st.TimedOut != 0 || st.Cancelled != 0 {
		b.Fatalf("%+v", st)
	}
}
