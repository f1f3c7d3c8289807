package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/host"
)

func callTool(t *testing.T, tool host.GoTool, args string) host.Result {
	t.Helper()
	res, err := tool.Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWorkspace(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "src"), 0o755)
	os.WriteFile(filepath.Join(root, "src", "a.go"), []byte("package a\n// TODO: fix\nfunc A() {}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "notes.md"), []byte("nothing TODO here? yes TODO\n"), 0o644)
	os.WriteFile(filepath.Join(root, "bin.dat"), []byte("TODO\x00binary"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link"))
	tools, err := Workspace(root)
	if err != nil {
		t.Fatal(err)
	}
	read, list, grep := tools[0], tools[1], tools[2]
	if r := callTool(t, read, `{"path":"src/a.go"}`); r.IsError || !strings.HasPrefix(r.Content, "package a") {
		t.Errorf("read: %+v", r)
	}
	if r := callTool(t, read, `{"path":"src/a.go","offset":10}`); r.IsError || !strings.HasPrefix(r.Content, "// TODO") {
		t.Errorf("read offset: %+v", r)
	}
	for _, p := range []string{"../secret", "/etc/passwd", "link", "src"} {
		if r := callTool(t, read, `{"path":"`+p+`"}`); !r.IsError || strings.Contains(r.Content, "secret\n") || strings.Contains(r.Content, "root:") {
			t.Errorf("read %s: %+v", p, r)
		}
	}
	if r := callTool(t, list, `{}`); r.Content != "bin.dat\nlink\nnotes.md\nsrc/" {
		t.Errorf("list: %q", r.Content)
	}
	if r := callTool(t, grep, `{"pattern":"TODO"}`); r.Content != "notes.md:1: nothing TODO here? yes TODO\nsrc/a.go:2: // TODO: fix" {
		t.Errorf("grep: %q", r.Content)
	}
	if r := callTool(t, grep, `{"pattern":"("}`); !r.IsError {
		t.Errorf("bad pattern: %+v", r)
	}
	if _, err := Workspace(filepath.Join(root, "nope")); err == nil {
		t.Error("missing workspace accepted")
	}
}

func TestSkills(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sql-style.md"), []byte("---\nname: sql-style\ndescription: How we write SQL\n---\nUse CTEs.\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "charts"), 0o755)
	os.WriteFile(filepath.Join(dir, "charts", "SKILL.md"), []byte("---\nname: charts\ndescription: \"Chart conventions\"\n---\nLabel axes.\n"), 0o644)
	tool, err := Skills(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := callTool(t, tool, `{}`); r.Content != "- charts: Chart conventions\n- sql-style: How we write SQL" {
		t.Errorf("list: %q", r.Content)
	}
	if r := callTool(t, tool, `{"name":"sql-style"}`); r.Content != "Use CTEs.\n" {
		t.Errorf("load: %q", r.Content)
	}
	if r := callTool(t, tool, `{"name":"nope"}`); !r.IsError || !strings.Contains(r.Content, "charts, sql-style") {
		t.Errorf("unknown: %+v", r)
	}
}

func TestShell(t *testing.T) {
	dir := t.TempDir()
	sh := Shell(dir, 500*time.Millisecond, 100)
	if r := callTool(t, sh, `{"command":"pwd"}`); r.IsError || strings.TrimSpace(r.Content) != dir {
		t.Errorf("pwd: %+v", r)
	}
	if r := callTool(t, sh, `{"command":"sleep 5"}`); !r.IsError || !strings.Contains(r.Content, "killed after") {
		t.Errorf("timeout: %+v", r)
	}
	if r := callTool(t, sh, `{"command":"yes | head -c 1000"}`); !strings.Contains(r.Content, "900 more bytes of output dropped") {
		t.Errorf("cap: %+v", r)
	}
	if r := callTool(t, sh, `{"command":"exit 3"}`); !r.IsError || !strings.Contains(r.Content, "exit status 3") {
		t.Errorf("exit: %+v", r)
	}
}
