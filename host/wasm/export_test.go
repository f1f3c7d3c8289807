package wasm

import "io"

// SetReseedSource makes o's host re-seed restored instances from r.
func SetReseedSource(o *Options, r io.Reader) { o.reseedSource = r }

// SnapshotsEnv is the environment variable that turns snapshots off.
const SnapshotsEnv = snapshotsEnv

// HoldCompileSlots takes every compile slot of h until release is called.
func HoldCompileSlots(h *Host) (release func()) {
	n := cap(h.compileSem)
	for range n {
		h.compileSem <- struct{}{}
	}
	return func() {
		for range n {
			<-h.compileSem
		}
	}
}

// SetPrepared makes o's host run f after a session's speculative instance
// (Session.Prepare) is made and before the session holds it.
func SetPrepared(o *Options, f func()) { o.prepared = f }
