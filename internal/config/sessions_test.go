package config

import (
	"strings"
	"testing"
)

// TestSessionStore: server.sessions.store is checked at load (scheme,
// host, database), its errors never show the password, and the redacted
// configuration keeps the host but not the password.
func TestSessionStore(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://:hunter2@cache:6379/0", `server.sessions.store: http://:xxxxx@cache:6379/0: scheme "http": want redis://`},
		{"redis://:hunter2@cache:6379/zero", "invalid database number"},
		{"redis:///0", "no host"},
	} {
		_, err := Load(Source{File: write(t, "server:\n  sessions:\n    store: "+tc.url+"\n")})
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.url)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows the password: %v", tc.url, err)
		case !strings.Contains(err.Error(), "server.sessions.store") || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	l, err := Load(Source{File: write(t, "server:\n  sessions:\n    store: rediss://toolshed:hunter2@cache.internal:6380/1\n")})
	if err != nil {
		t.Fatal(err)
	}
	if l.Server.Sessions.Store != "rediss://toolshed:hunter2@cache.internal:6380/1" {
		t.Fatalf("store: %q", l.Server.Sessions.Store)
	}
	out, err := l.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "rediss://toolshed:xxxxx@cache.internal:6380/1") {
		t.Fatalf("redacted:\n%s", out)
	}
}
