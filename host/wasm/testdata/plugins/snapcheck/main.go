// Command snapcheck holds the tools the snapshot isolation tests call:
// per-instance state, the runtime's randomness seen every way a Go
// program sees it, values frozen by its initialiser, and failures.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	mrand "math/rand"
	rand2 "math/rand/v2"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/sdk"
)

var (
	counter int
	seen    = map[string]int{}
	hoard   [][]byte
	// Made by the initialiser: frozen into a snapshot.
	initMap  = map[int]bool{}
	initRand = rand2.Uint64()
	initSeed = maphash.MakeSeed()
	initTime = time.Now()
)

// State is what one instance holds.
type State struct {
	Counter int `json:"counter"`
	Keys    int `json:"keys"`
	Hoard   int `json:"hoard_mb"`
}

// Random is the randomness one instance sees.
type Random struct {
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

type growArgs struct {
	MB int `json:"mb"`
}

type keyArgs struct {
	Key string `json:"key"`
}

type sleepArgs struct {
	MS int `json:"ms"`
}

func order(m map[int]bool) string {
	var b strings.Builder
	for k := range m {
		fmt.Fprintf(&b, "%d,", k)
	}
	return b.String()
}

func recurse(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func init() {
	for i := range 32 {
		initMap[i] = true
	}
	sdk.Handle("state", func(a keyArgs) (sdk.Result, error) {
		counter++
		seen[a.Key]++
		return sdk.JSON(State{Counter: counter, Keys: len(seen), Hoard: len(hoard)}), nil
	})
	sdk.Handle("grow", func(a growArgs) (sdk.Result, error) {
		for range a.MB {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			hoard = append(hoard, b)
		}
		return sdk.JSON(State{Counter: counter, Keys: len(seen), Hoard: len(hoard)}), nil
	})
	sdk.Handle("random", func(struct{}) (sdk.Result, error) {
		newMap := map[int]bool{}
		for i := range 32 {
			newMap[i] = true
		}
		var c [16]byte
		rand.Read(c[:])
		var h maphash.Hash
		h.SetSeed(initSeed)
		h.WriteString("x")
		return sdk.JSON(Random{
			MathRand:   mrand.Int63(),
			MathRandV2: rand2.Uint64(),
			MapHash:    maphash.String(maphash.MakeSeed(), "x"),
			InitMap:    order(initMap),
			NewMap:     order(newMap),
			Crypto:     hex.EncodeToString(c[:]),
			InitRand:   initRand,
			InitHash:   h.Sum64(),
			InitAgeMS:  time.Since(initTime).Milliseconds(),
		}), nil
	})
	sdk.Handle("first_rand", func(struct{}) (sdk.Result, error) {
		// The first runtime.rand output this call sees, through
		// math/rand/v2's global source, before anything else draws.
		return sdk.JSON(rand2.Uint64()), nil
	})
	sdk.Handle("sorted", func(struct{}) (sdk.Result, error) {
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return sdk.JSON(keys), nil
	})
	sdk.Handle("trap", func(struct{}) (sdk.Result, error) {
		// A stack overflow is fatal (no recover): the module traps.
		debug.SetMaxStack(1 << 20)
		return sdk.JSON(recurse(0)), nil
	})
	sdk.Handle("blowup", func(struct{}) (sdk.Result, error) {
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	})
	sdk.Handle("spin", func(struct{}) (sdk.Result, error) {
		for {
		}
	})
	sdk.Handle("sleep", func(a sleepArgs) (sdk.Result, error) {
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
		return sdk.JSON("slept"), nil
	})
}

func main() {}
