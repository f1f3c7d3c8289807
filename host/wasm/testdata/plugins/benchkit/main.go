// Command benchkit holds the tools the runtime benchmarks call: an echo of
// a small JSON object and a loop-heavy computation.
package main

import "github.com/toolshed/toolshed/sdk"

// Echo is the ~100-byte JSON round trip, also called natively.
type Echo struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

// Wrapped is a result of another type than the arguments: its encoder is
// not prepared at registration, so a first call pays for it.
type Wrapped struct {
	Echo  Echo `json:"echo"`
	Words int  `json:"words"`
}

type spinArgs struct {
	N int `json:"n"`
}

// Spin is loop-heavy: it sums a hash over n iterations.
func Spin(n int) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

func init() {
	sdk.Handle("echo", func(a Echo) (sdk.Result, error) { return sdk.JSON(a), nil })
	sdk.Handle("wrap", func(a Echo) (sdk.Result, error) { return sdk.JSON(Wrapped{Echo: a, Words: len(a.Tags)}), nil })
	sdk.Handle("spin", func(a spinArgs) (sdk.Result, error) { return sdk.JSON(Spin(a.N)), nil })
}

func main() {}
