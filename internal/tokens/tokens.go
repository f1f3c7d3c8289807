// Package tokens counts BPE tokens offline with OpenAI's o200k_base
// encoding (the vocabulary ships inside the module; nothing is fetched).
// The vocabulary loads on first use. Counts of repeated texts are cached.
// All functions are safe for concurrent use.
package tokens

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

var (
	once  sync.Once
	codec tokenizer.Codec
	err   error

	mu    sync.Mutex
	cache = map[string]int{}
)

// maxCache bounds the cache; past it, counts are computed every time.
const maxCache = 1 << 14

// Count returns the number of o200k_base tokens in s.
func Count(s string) (int, error) {
	mu.Lock()
	n, ok := cache[s]
	mu.Unlock()
	if ok {
		return n, nil
	}
	once.Do(func() { codec, err = tokenizer.Get(tokenizer.O200kBase) })
	if err != nil {
		return 0, err
	}
	n, err := codec.Count(s)
	if err != nil {
		return 0, err
	}
	mu.Lock()
	if len(cache) < maxCache {
		cache[s] = n
	}
	mu.Unlock()
	return n, nil
}
