package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/config"
)

// TestConfigPrint: file < environment < flags, secrets redacted, bad keys
// named.
func TestConfigPrint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "toolshed.yaml")
	os.WriteFile(p, []byte("model:\n  name: file-model\n  api_key: sk-from-file\nsearch:\n  mode: keyword\nserver:\n  addr: 127.0.0.1:7000\n"), 0o644)
	t.Setenv("TOOLSHED_SEARCH_MODE", "llm")
	t.Setenv("TOOLSHED_SERVER_API_KEYS", "a-very-secret-key-1,a-very-secret-key-2")
	code, out, errs := runCLI("config", "print", "--config", p, "--addr", "127.0.0.1:7001")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"name: file-model", "mode: llm", "addr: 127.0.0.1:7001", "api_key: <redacted>", "- <redacted>", p} {
		if !strings.Contains(out, want) {
			t.Errorf("config print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-from-file") || strings.Contains(out, "a-very-secret") {
		t.Fatalf("a secret was printed:\n%s", out)
	}
	t.Setenv("TOOLSHED_SEARCH_MODE", "psychic")
	if code, _, errs := runCLI("config", "print", "--config", p); code != 1 || !strings.Contains(errs, "search.mode") {
		t.Fatalf("bad value: exit %d %s", code, errs)
	}
	t.Setenv("TOOLSHED_SEARCH_MODE", "")
	os.WriteFile(p, []byte("serve:\n  addr: x\n"), 0o644)
	if code, _, errs := runCLI("config", "print", "--config", p); code != 1 || !strings.Contains(errs, `unknown key "serve.addr"`) {
		t.Fatalf("unknown key: exit %d %s", code, errs)
	}
}

func TestJSONLogs(t *testing.T) {
	var b bytes.Buffer
	newConfigLogger(config.Log{Level: "info", Format: "json"}, &b).Info("hello", "k", 1)
	var v map[string]any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil || v["msg"] != "hello" || v["k"] != 1.0 {
		t.Fatalf("%s %v", b.String(), err)
	}
	b.Reset()
	newConfigLogger(config.Log{Level: "warn", Format: "text"}, &b).Info("quiet")
	if b.Len() != 0 {
		t.Fatalf("info at warn level: %s", b.String())
	}
}
