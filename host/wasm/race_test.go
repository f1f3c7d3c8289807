//go:build race

package wasm_test

// raceEnabled shortens the long soak tests under the race detector.
const raceEnabled = true
