package manifest

import (
	"strings"
	"testing"
)

func TestZZProbe(t *testing.T) {
	cases := []string{
		"{" + strings.Repeat("\n", 20) + "\"name\": \"a\x01\"}",
		"{" + strings.Repeat("\n", 20) + "\"name\": \"a\\q\"}",
		"{" + strings.Repeat("\n", 20) + "\"limits\": {\"timeout_ms\": -x}}",
		"{" + strings.Repeat("\n", 20) + "\"limits\": {\"timeout_ms\": 1.}}",
		"{" + strings.Repeat("\n", 20) + "\"limits\": {\"timeout_ms\": tru}}",
		"{" + strings.Repeat("\n", 20) + "\"limits\" {}}",
		"{\"name\":\"x\",\n\"version\" 1}",
	}
	for _, o := range []string{"https://:443", "https://example.com:", "https://example.com?", "https://example.com#", "HTTPS://Example.com", "http://[::1]:80", "https://example.com/", "https://u@example.com", "ftp://example.com", "https://example.com/path", "https://", "http://:0"} {
		t.Logf("origin %q -> %q", o, checkOrigin(o))
	}
	for _, c := range cases {
		_, err := Decode([]byte(c))
		t.Logf("IN %q\n  err=%v", c, err)
	}
}
