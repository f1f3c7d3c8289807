//go:build race

package catalog

// raceEnabled: the race detector slows loads several times over, so the
// cost tests check their time bounds only without it.
const raceEnabled = true
