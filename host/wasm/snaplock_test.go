package wasm

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestSnapshotQueueGivesUp: a session's first call queued behind another
// call's snapshot capture (which may wait up to Options.MemoryWait for
// room in the memory budget) gives up when its own context ends instead
// of waiting for the capture; once the capture is over, calls go on.
func TestSnapshotQueueGivesUp(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, f.cache, -1)
	defer h.Close(context.Background())
	p, err := h.Plugin(f.echo.Plugin)
	if err != nil {
		t.Fatal(err)
	}
	// Compiled beforehand: the deadline below is for the wait behind the
	// capture, and a compile on a loaded machine (the race detector, both
	// cores busy) can take longer than any deadline meant for that wait.
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.snapPending.Store(true)
	p.snapLock <- struct{}{} // a capture in progress elsewhere
	held := true
	defer func() {
		if held { // a failure below: Close waits for the capture to end
			<-p.snapLock
		}
	}()
	s := h.NewSession()
	defer s.Close(context.Background())
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := s.Call(ctx, f.echo, json.RawMessage(echoArgs))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the call behind the capture ran")
		}
	case <-time.After(time.Minute):
		t.Fatal("the call behind the capture did not give up when its context ended")
	}
	<-p.snapLock // the capture ends (without a snapshot: the next call takes one)
	held = false
	if _, err := s.Call(context.Background(), f.echo, json.RawMessage(echoArgs)); err != nil {
		t.Fatalf("after the capture: %v", err)
	}
}
