package wasm

import "io"

// SetReseedSource makes o's host re-seed restored instances from r.
func SetReseedSource(o *Options, r io.Reader) { o.reseedSource = r }

// SnapshotsEnv is the environment variable that turns snapshots off.
const SnapshotsEnv = snapshotsEnv
