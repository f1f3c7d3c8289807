package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolshed.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	p := write(t, "model:\n  name: from-file\n  timeout: 30s\nserver:\n  addr: 127.0.0.1:9000\n  api_keys: [aaaaaaaaaaaaaaaa]\nsearch:\n  mode: keyword\n")
	l, err := Load(Source{File: p,
		Env:   []string{"TOOLSHED_MODEL_NAME=from-env", "TOOLSHED_SERVER_ADDR=127.0.0.1:9001", "OPENAI_API_KEY=sk-secret", "TOOLSHED_SEARCH_EMBEDDINGS_API_KEY=emb-secret", "HOME=/x"},
		Flags: map[string]string{"server.addr": "127.0.0.1:9002"}})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Model.Name != "from-env" || c.Server.Addr != "127.0.0.1:9002" || c.Search.Mode != "keyword" ||
		c.Model.Timeout != 30*time.Second || c.Model.APIKey != "sk-secret" || c.Plugins.Poll != 2*time.Second ||
		len(c.Server.APIKeys) != 1 || l.File != p {
		t.Fatalf("%+v", c)
	}
	out, err := l.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sk-secret") || strings.Contains(string(out), "emb-secret") || strings.Contains(string(out), "aaaaaaaa") ||
		!strings.Contains(string(out), "api_key: <redacted>") || !strings.Contains(string(out), "name: from-env") {
		t.Fatalf("redacted:\n%s", out)
	}
	// Aliases, and a file that is absent when not named.
	dir := t.TempDir()
	wd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(wd)
	l, err = Load(Source{Env: []string{"TOOLSHED_PLUGINS=/p", "TOOLSHED_MODEL=m", "TOOLSHED_SERVER_API_KEYS=bbbbbbbbbbbbbbbb, cccccccccccccccc"}})
	if err != nil || l.Plugins.Dir != "/p" || l.Model.Name != "m" || len(l.Server.APIKeys) != 2 || l.File != "" {
		t.Fatalf("%+v %v", l, err)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		file  string
		env   []string
		flags map[string]string
		want  string
	}{
		{file: "server:\n  adress: x\n", want: `unknown key "server.adress"`},
		{file: "search:\n  mode: fuzzy\n", want: `search.mode: "fuzzy" is not one of keyword, llm, hybrid`},
		{file: "server:\n  max_body_bytes: lots\n", want: "server.max_body_bytes"},
		{file: "model:\n  timeout: soon\n", want: "model.timeout"},
		{file: "agent:\n  max_rounds: 0\n", want: "agent.max_rounds: must be more than 0"},
		{file: "server:\n  continuation_key: not-base64!\n", want: "server.continuation_key: not base64"},
		{file: "server:\n  continuation_key: c2hvcnQ=\n", want: "server.continuation_key: 5 bytes decoded; at least 32"},
		{file: "server:\n  addr: 8080\n", want: `server.addr: "8080" is not HOST:PORT`},
		{file: "server:\n  api_keys: [short]\n", want: "server.api_keys: key 1 is shorter"},
		{file: "model: [\n", want: "config"},
		{file: "search:\n  embeddings:\n    base_url: localhost:11434\n", want: `search.embeddings.base_url: "localhost:11434" is not an http(s) URL`},
		{file: "search:\n  embeddings:\n    base_url: http://127.0.0.1:1/v1\n    model: \"\"\n", want: "search.embeddings.model: is empty"},
		{file: "search:\n  embeddings:\n    dimensions: -3\n", want: "search.embeddings.dimensions: -3 is not from 0"},
		{file: "search:\n  embeddings:\n    timeout: -1s\n", want: "search.embeddings.timeout: -1s is negative"},
		{env: []string{"TOOLSHED_SEARCH_EMBEDDINGS_API_KEY=REPLACE-with-a-key"}, want: "search.embeddings.api_key: is still the example's placeholder"},
		{env: []string{"TOOLSHED_SERVR_ADDR=x"}, want: "TOOLSHED_SERVR_ADDR is not a configuration key"},
		{env: []string{"TOOLSHED_PLUGINS_WATCH=maybe"}, want: "plugins.watch"},
		{flags: map[string]string{"search.limit": "50"}, want: "search.limit: at most 20"},
		{file: "server:\n  instance_memory_wait: -1s\n", want: "server.instance_memory_wait: must not be negative"},
		{flags: map[string]string{"server.instance_memory_wait": "6m"}, want: "server.instance_memory_wait: at most 5m0s (got 6m0s)"},
		{env: []string{"TOOLSHED_SERVER_INSTANCE_MEMORY_WAIT=soon"}, want: "server.instance_memory_wait"},
	} {
		src := Source{Env: tc.env, Flags: tc.flags, File: write(t, tc.file)}
		_, err := Load(src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v %v: %v, want %q", tc.file, tc.env, tc.flags, err, tc.want)
		}
	}
	// A section left empty, and a list given as one string.
	l, err := Load(Source{File: write(t, "server:\n  # addr: x\n  api_keys: aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb\nlog:\n")})
	if err != nil || len(l.Server.APIKeys) != 2 {
		t.Errorf("empty section / list string: %+v %v", l, err)
	}
	if _, err := Load(Source{File: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Error("a named file that does not exist was accepted")
	}
}

// TestExampleFile: the documented example in the repository loads and
// names every key.
func TestExampleFile(t *testing.T) {
	path := filepath.Join("..", "..", "toolshed.example.yaml")
	l, err := Load(Source{File: path})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(path)
	for _, k := range Keys() {
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(string(body), leaf+":") {
			t.Errorf("the example does not show %s", k)
		}
	}
	if l.Server.Addr == "" {
		t.Error("no address")
	}
}

// TestInstanceMemoryWait: server.instance_memory_wait is off by default
// and set from the file, the environment (which the flags override) and
// up to its maximum.
func TestInstanceMemoryWait(t *testing.T) {
	for _, tc := range []struct {
		file  string
		env   []string
		flags map[string]string
		want  time.Duration
	}{
		{want: 0},
		{file: "server:\n  instance_memory_wait: 2s\n", want: 2 * time.Second},
		{env: []string{"TOOLSHED_SERVER_INSTANCE_MEMORY_WAIT=1m30s"}, want: 90 * time.Second},
		{env: []string{"TOOLSHED_SERVER_INSTANCE_MEMORY_WAIT=1m"}, flags: map[string]string{"server.instance_memory_wait": "5m"}, want: MaxInstanceMemoryWait},
	} {
		l, err := Load(Source{File: write(t, tc.file), Env: tc.env, Flags: tc.flags})
		if err != nil || l.Server.InstanceMemoryWait != tc.want {
			t.Errorf("%q %v %v: %v %v, want %s", tc.file, tc.env, tc.flags, l.Server.InstanceMemoryWait, err, tc.want)
		}
	}
}

// TestSessionsCA: server.sessions.ca is a PEM file of authorities for a
// rediss:// store; set without one, unreadable or holding no certificate
// it is refused, naming the key.
func TestSessionsCA(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ store, ca, want string }{
		{"redis://127.0.0.1:6379/0", garbage, "server.sessions.ca: set, but server.sessions.store is not a rediss://"},
		{"", garbage, "server.sessions.ca: set, but"},
		{"rediss://127.0.0.1:6380/0", filepath.Join(dir, "missing.pem"), "server.sessions.ca: open"},
		{"rediss://127.0.0.1:6380/0", garbage, "server.sessions.ca: " + garbage + ": no PEM certificate"},
	} {
		_, err := Load(Source{Flags: map[string]string{"server.sessions.store": tc.store, "server.sessions.ca": tc.ca}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("store %q ca %q: %v, want %q", tc.store, tc.ca, err, tc.want)
		}
	}
}
