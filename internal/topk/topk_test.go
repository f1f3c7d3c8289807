package topk

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

func TestInsertKeepsBestK(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		n, k := r.Intn(50), 1+r.Intn(10)
		var all, best []int
		for i := 0; i < n; i++ {
			v := r.Intn(20)
			all = append(all, v)
			best = Insert(best, v, k, func(a, b int) bool { return a > b })
		}
		sort.Sort(sort.Reverse(sort.IntSlice(all)))
		if len(all) > k {
			all = all[:k]
		}
		if !reflect.DeepEqual(best, all) && !(len(best) == 0 && len(all) == 0) {
			t.Fatalf("k=%d: got %v, want %v", k, best, all)
		}
	}
}
