package main

import (
	"strings"
	"testing"
)

// A run with a pass, a skip with its reason, a failure with its output and
// a build error: the failure's output and the package lines are printed,
// the skip is listed with its reason, the exit status is 1.
func TestSummarize(t *testing.T) {
	in := `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestOK"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"a","Test":"TestOK"}
{"Action":"run","Package":"a","Test":"TestSkip"}
{"Action":"output","Package":"a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"a","Test":"TestSkip","Output":"    x_test.go:9: wat2wasm is not installed\n"}
{"Action":"output","Package":"a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"a","Test":"TestSkip"}
{"Action":"run","Package":"a","Test":"TestBad"}
{"Action":"output","Package":"a","Test":"TestBad","Output":"    x_test.go:20: got 2, want 3\n"}
{"Action":"fail","Package":"a","Test":"TestBad"}
{"Action":"output","Package":"a","Output":"FAIL\ta\t0.01s\n"}
{"Action":"fail","Package":"a"}
{"Action":"build-output","ImportPath":"b","Output":"b/b.go:1:1: syntax error\n"}
{"Action":"output","Package":"c","Output":"ok  \tc\t0.02s\n"}
{"Action":"pass","Package":"c"}
`
	var out strings.Builder
	if code := summarize(strings.NewReader(in), &out); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{"x_test.go:20: got 2, want 3", "FAIL\ta\t0.01s", "b/b.go:1:1: syntax error", "ok  \tc\t0.02s",
		"1 tests skipped:\n  SKIP a TestSkip: x_test.go:9: wat2wasm is not installed\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestOK") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
	if code := summarize(strings.NewReader(""), &out); code != 1 {
		t.Error("no events: exit 0")
	}
}
