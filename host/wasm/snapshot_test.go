package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
)

// snapshotsOn says whether this run restores instances from snapshots
// (Linux, unless TOOLSHED_WASM_SNAPSHOTS=off). Every test here passes
// either way; some assert more when snapshots are on.
func snapshotsOn() bool {
	return runtime.GOOS == "linux" && os.Getenv(wasm.SnapshotsEnv) != "off"
}

var snapTools = []string{"state", "grow", "random", "first_rand", "sorted", "trap", "blowup", "spin", "sleep"}

func snapPlugin(t testing.TB, extra string) *catalog.Snapshot {
	return writePlugins(t, spec{name: "snapcheck", module: module(t, "snapcheck"), tools: snapTools,
		limits: `{"timeout_ms": 1000, "max_memory_mb": 48}`, extra: extra})
}

// callJSON calls a tool in s and decodes its JSON result into v.
func callJSON(t testing.TB, s *wasm.Session, snap *catalog.Snapshot, tool, args string, v any) {
	t.Helper()
	res, err := call(t, s, snap, tool, args)
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %s", tool, err, res.Content)
	}
	if err := json.Unmarshal([]byte(res.Content), v); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, res.Content)
	}
}

type snapState struct {
	Counter int `json:"counter"`
	Keys    int `json:"keys"`
	Hoard   int `json:"hoard_mb"`
}

type snapRandom struct {
	MathRand   int64  `json:"math_rand"`
	MathRandV2 uint64 `json:"math_rand_v2"`
	MapHash    uint64 `json:"maphash"`
	InitMap    string `json:"init_map_order"`
	NewMap     string `json:"new_map_order"`
	Crypto     string `json:"crypto_rand"`
	InitRand   uint64 `json:"init_rand"`
	InitHash   uint64 `json:"init_seed_hash"`
	InitAgeMS  int64  `json:"init_age_ms"`
}

func checkRestored(t testing.TB, h *wasm.Host) {
	t.Helper()
	st := h.Stats()
	if snapshotsOn() && (st.Snapshots == 0 || st.Restores == 0 || st.SnapshotFailures != 0) {
		t.Errorf("snapshots on, but stats are %+v", st)
	}
	if !snapshotsOn() && st.Restores != 0 {
		t.Errorf("snapshots off, but %d instances were restored", st.Restores)
	}
}

// Two instances never share state: a counter, a map, memory grown.
func TestSnapshotState(t *testing.T) {
	snap := snapPlugin(t, "")
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	a, b := h.NewSession(), h.NewSession()
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	var st snapState
	for i := 1; i <= 3; i++ {
		callJSON(t, a, snap, "state", `{"key": "k`+string(rune('0'+i))+`"}`, &st)
		if st.Counter != i || st.Keys != i {
			t.Fatalf("session a call %d: %+v", i, st)
		}
	}
	callJSON(t, a, snap, "grow", `{"mb": 16}`, &st)
	if st.Hoard != 16 {
		t.Fatalf("grow: %+v", st)
	}
	callJSON(t, b, snap, "state", `{"key": "b"}`, &st)
	if st != (snapState{Counter: 1, Keys: 1}) {
		t.Errorf("session b sees %+v; want a fresh instance's state", st)
	}
	var keys []string
	callJSON(t, b, snap, "sorted", `{}`, &keys)
	if strings.Join(keys, ",") != "b" {
		t.Errorf("session b's map holds %v", keys)
	}
	c := h.NewSession()
	defer c.Close(context.Background())
	callJSON(t, c, snap, "state", `{"key": "c"}`, &st)
	if st != (snapState{Counter: 1, Keys: 1}) {
		t.Errorf("a later session sees %+v", st)
	}
	checkRestored(t, h)
}

// Randomness differs per instance: math/rand, math/rand/v2, maphash, map
// iteration order and crypto/rand. What the initialiser drew is frozen
// into the snapshot (the documented pitfall); with snapshots off it
// differs too.
func TestSnapshotRandomness(t *testing.T) {
	snap := snapPlugin(t, "")
	h, _ := newHost(t, nil)
	const n = 8
	var rs []snapRandom
	for range n {
		s := h.NewSession()
		var r snapRandom
		callJSON(t, s, snap, "random", `{}`, &r)
		s.Close(context.Background())
		rs = append(rs, r)
	}
	distinct := func(what string, f func(snapRandom) string) int {
		seen := map[string]bool{}
		for _, r := range rs {
			seen[f(r)] = true
		}
		return len(seen)
	}
	str := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct {
		what string
		f    func(snapRandom) string
		min  int
	}{
		{"math/rand", func(r snapRandom) string { return str(r.MathRand) }, n},
		{"math/rand/v2", func(r snapRandom) string { return str(r.MathRandV2) }, n},
		{"maphash", func(r snapRandom) string { return str(r.MapHash) }, n},
		{"crypto/rand", func(r snapRandom) string { return r.Crypto }, n},
		// 32 keys: the chance of two instances' orders matching by luck
		// is small, of all eight matching nil; ask for half distinct.
		{"order of a map made by init", func(r snapRandom) string { return r.InitMap }, n / 2},
		{"order of a new map", func(r snapRandom) string { return r.NewMap }, n / 2},
	} {
		if got := distinct(c.what, c.f); got < c.min {
			t.Errorf("%s: %d distinct values in %d instances, want at least %d", c.what, got, n, c.min)
		}
	}
	frozen := distinct("init", func(r snapRandom) string { return str(r.InitRand) })
	if snapshotsOn() && frozen != 1 {
		t.Errorf("a value drawn by init: %d distinct; a snapshot freezes it (docs/RUNTIME.md)", frozen)
	}
	if !snapshotsOn() && frozen != n {
		t.Errorf("a value drawn by init: %d distinct in %d fresh instances", frozen, n)
	}
	checkRestored(t, h)
}

// repeat is a reader that gives the same bytes forever.
type repeat []byte

func (r repeat) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = r[i%len(r)]
	}
	return len(b), nil
}

// The known answer: re-seeded with a key the test chooses, a restored
// instance's runtime.rand (through math/rand/v2's global source) gives
// the outputs of ChaCha8 with that key, in both instances alike; the
// host's own check holds the same on every restored instance.
func TestSnapshotKnownAnswer(t *testing.T) {
	if !snapshotsOn() {
		t.Skip("snapshots are off")
	}
	key := [32]byte{}
	copy(key[:], "toolshed known answer, 32 bytes")
	want := map[uint64]int{}
	g := mrand.NewChaCha8(key)
	for i := range 64 {
		want[g.Uint64()] = i
	}
	snap := snapPlugin(t, "")
	opts := &wasm.Options{PoolSize: -1}
	wasm.SetReseedSource(opts, repeat(key[:]))
	h, _ := newHost(t, opts)
	var got []uint64
	for range 2 {
		s := h.NewSession()
		var v uint64
		callJSON(t, s, snap, "first_rand", `{}`, &v)
		s.Close(context.Background())
		got = append(got, v)
	}
	if _, ok := want[got[0]]; !ok || got[0] != got[1] {
		t.Errorf("first_rand = %x, %x; want the same output of ChaCha8(key) in both", got[0], got[1])
	}
	checkRestored(t, h)
}

// A trap or a memory blow-up in one instance leaves the snapshot and the
// other instances as they were.
func TestSnapshotSurvivesFailures(t *testing.T) {
	snap := snapPlugin(t, "")
	h, _ := newHost(t, nil)
	by := h.NewSession()
	defer by.Close(context.Background())
	var st snapState
	callJSON(t, by, snap, "state", `{"key": "by"}`, &st)
	for _, c := range []struct{ tool, want string }{
		{"trap", "trapped"},
		{"blowup", "trapped|timed out"},
		{"spin", "timed out"},
	} {
		s := h.NewSession()
		start := time.Now()
		_, err := call(t, s, snap, c.tool, `{}`)
		took := time.Since(start)
		s.Close(context.Background())
		var ce *wasm.CallError
		ok := false
		for _, w := range strings.Split(c.want, "|") {
			ok = ok || err != nil && strings.Contains(err.Error(), w)
		}
		if !errors.As(err, &ce) || !ok {
			t.Errorf("%s: err = %v, want a CallError with %q", c.tool, err, c.want)
		}
		if took > time.Second+slack {
			t.Errorf("%s: took %s under a 1 s timeout", c.tool, took)
		}
		// The bystander's instance carries on with its state.
		callJSON(t, by, snap, "state", `{"key": "by"}`, &st)
		// A new instance is as the initialiser left it.
		n := h.NewSession()
		var fresh snapState
		callJSON(t, n, snap, "state", `{"key": "n"}`, &fresh)
		var keys []string
		callJSON(t, n, snap, "sorted", `{}`, &keys)
		n.Close(context.Background())
		if fresh != (snapState{Counter: 1, Keys: 1}) || strings.Join(keys, ",") != "n" {
			t.Errorf("after %s a new instance has %+v %v", c.tool, fresh, keys)
		}
	}
	if st.Counter != 4 {
		t.Errorf("the bystander's counter is %d, want 4", st.Counter)
	}
	checkRestored(t, h)
}

// The limits hold for restored instances as for fresh ones: memory (a
// grow past max_memory_mb fails, one within it works), the deadline on
// a sleep, the deadline on a spin (above).
func TestSnapshotLimits(t *testing.T) {
	snap := snapPlugin(t, "")
	h, _ := newHost(t, &wasm.Options{PoolSize: -1})
	s := h.NewSession()
	var st snapState
	callJSON(t, s, snap, "grow", `{"mb": 24}`, &st)
	_, err := call(t, s, snap, "grow", `{"mb": 40}`)
	if err == nil {
		t.Error("grew past max_memory_mb 48")
	}
	s.Close(context.Background())
	s = h.NewSession()
	start := time.Now()
	_, err = call(t, s, snap, "sleep", `{"ms": 60000}`)
	s.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > time.Second+slack {
		t.Errorf("sleep 60 s under a 1 s timeout: %v after %s", err, time.Since(start))
	}
	checkRestored(t, h)
}

// Many sessions at once, each on its own restored instance, under the
// race detector: none sees another's state, none fails.
func TestSnapshotHammer(t *testing.T) {
	snap := snapPlugin(t, "")
	h, _ := newHost(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	rounds := 12
	if raceEnabled {
		rounds = 4
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				s := h.NewSession()
				for k := 1; k <= 3; k++ {
					res, err := call(t, s, snap, "state", `{"key": "w"}`)
					var st snapState
					if err == nil {
						err = json.Unmarshal([]byte(res.Content), &st)
					}
					if err == nil && (st.Counter != k || st.Keys != 1) {
						err = errors.New("shared state: " + res.Content)
					}
					if err != nil {
						errs <- err
						break
					}
				}
				s.Close(context.Background())
				_ = w + i
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkRestored(t, h)
}

// A manifest's "snapshot": false and Options.FreshInstances give fresh
// instances.
func TestSnapshotOptOut(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra string
		opts  wasm.Options
	}{
		{"manifest", `"snapshot": false`, wasm.Options{PoolSize: -1}},
		{"options", "", wasm.Options{PoolSize: -1, FreshInstances: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := snapPlugin(t, c.extra)
			opts := c.opts
			h, logs := newHost(t, &opts)
			s := h.NewSession()
			var st snapState
			callJSON(t, s, snap, "state", `{}`, &st)
			s.Close(context.Background())
			if r := h.Stats().Restores; r != 0 || st.Counter != 1 {
				t.Errorf("%d restored instances, state %+v", r, st)
			}
			if snapshotsSupported := runtime.GOOS == "linux"; snapshotsSupported && !bytes.Contains([]byte(logs.String()), []byte("instances are fresh")) {
				t.Errorf("no log says why the instances are fresh:\n%s", logs)
			}
		})
	}
}
