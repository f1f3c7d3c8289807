package wasm

import "fmt"

// quota counts what one instance spent on the log and artifact
// capabilities, in the current call and over its life. It is used under
// the instance's call lock (host functions run on the calling goroutine).
type quota struct {
	log, artifact usage
}

// usage is one capability's spending: items and their bytes.
type usage struct{ items, bytes meter }

// meter counts one measure in the current call and over the instance's
// life.
type meter struct{ call, life int64 }

// startCall resets the per-call counters.
func (q *quota) startCall() {
	for _, m := range []*meter{&q.log.items, &q.log.bytes, &q.artifact.items, &q.artifact.bytes} {
		m.call = 0
	}
}

// charge spends one item of n bytes, or says which quota it breaks
// (nothing is spent then). maxItems and maxBytes are per call; a session
// gets SessionQuotaCalls times as much.
func (u *usage) charge(op, items string, n int64, maxItems int, maxBytes int64) error {
	if err := u.items.check(op, items, 1, int64(maxItems)); err != nil {
		return err
	}
	if err := u.bytes.check(op, "bytes", n, maxBytes); err != nil {
		return err
	}
	u.items.add(1)
	u.bytes.add(n)
	return nil
}

func (m *meter) check(op, unit string, n, perCall int64) error {
	if m.call+n > perCall {
		return fmt.Errorf("%s: quota exceeded: at most %d %s per call (%d used)", op, perCall, unit, m.call)
	}
	if perSession := perCall * SessionQuotaCalls; m.life+n > perSession {
		return fmt.Errorf("%s: quota exceeded: at most %d %s per session (%d used)", op, perSession, unit, m.life)
	}
	return nil
}

func (m *meter) add(n int64) { m.call, m.life = m.call+n, m.life+n }
