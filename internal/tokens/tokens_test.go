package tokens

import "testing"

func TestCount(t *testing.T) {
	for s, want := range map[string]int{"": 0, "hello world": 2, `{"type":"function"}`: 5} {
		n, err := Count(s)
		if err != nil || n != want {
			t.Errorf("Count(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	if n, _ := Count("生成图表"); n < 2 {
		t.Errorf("Chinese counted as %d tokens", n)
	}
}
