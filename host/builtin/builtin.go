package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/safepath"
)

func toolError(format string, args ...any) (host.Result, error) {
	return host.Result{Content: fmt.Sprintf(format, args...), IsError: true}, nil
}

func decode(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// Todo is the todo_write tool: a todo list that lives for one request.
func Todo() host.GoTool {
	type item struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	type list struct {
		mu    sync.Mutex
		items []item
	}
	return host.GoTool{
		Name:        "todo_write",
		Title:       "Todo list",
		Annotations: &manifest.Annotations{ReadOnlyHint: no, DestructiveHint: no, IdempotentHint: yes, OpenWorldHint: no},
		Description: "Keep a todo list for this task: send the whole list each time (content and status pending, in_progress or completed). Use it to plan multi-step work.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{` +
			`"content":{"type":"string","description":"What to do"},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`),
		SessionCall: func(_ context.Context, s *host.Session, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Todos []item `json:"todos"`
			}
			if err := decode(raw, &a); err != nil {
				return toolError("%v", err)
			}
			l := s.State("todo_write", func() any { return &list{} }).(*list)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.items = a.Todos
			var b strings.Builder
			done := 0
			for _, it := range l.items {
				mark := map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}[it.Status]
				if it.Status == "completed" {
					done++
				}
				fmt.Fprintf(&b, "%s %s\n", mark, it.Content)
			}
			fmt.Fprintf(&b, "%d of %d done", done, len(l.items))
			return host.Result{Content: b.String()}, nil
		},
	}
}

// Limits of the workspace tools.
const (
	maxReadBytes   = 256 << 10
	maxListEntries = 1000
	maxGrepMatches = 200
	maxGrepFile    = 4 << 20
)

// Workspace returns read_file, list_dir and grep, confined to root: paths
// are relative to it, and neither ".." nor a symbolic link leads out.
func Workspace(root string) ([]host.GoTool, error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("builtin: workspace %s is not a directory", root)
	}
	// at decodes the arguments, cleans their path and opens the root; a
	// non-empty message is the tool error.
	at := func(raw json.RawMessage, args any, p *string) (*os.Root, string, string) {
		if err := decode(raw, args); err != nil {
			return nil, "", err.Error()
		}
		name, err := safepath.Clean(*p)
		if err != nil {
			return nil, "", err.Error()
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, "", "workspace unavailable: " + err.Error()
		}
		return r, name, ""
	}
	pathParam := `"path":{"type":"string","description":"Path relative to the workspace"}`
	read := host.GoTool{
		Name:        "read_file",
		Title:       "Read file",
		Annotations: &manifest.Annotations{ReadOnlyHint: yes, OpenWorldHint: no},
		Description: "Read a text file of the workspace (at most 256 KiB at a time; use offset for more).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{` + pathParam + `,"offset":{"type":"integer","minimum":0,"description":"Byte offset to start at"}},"required":["path"]}`),
		Call: func(_ context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Path   string `json:"path"`
				Offset int64  `json:"offset"`
			}
			r, p, msg := at(raw, &a, &a.Path)
			if msg != "" {
				return toolError("%s", msg)
			}
			defer r.Close()
			f, err := r.Open(p)
			if err != nil {
				return toolError("%s: %v", a.Path, safepath.Unwrap(err))
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil && st.IsDir() {
				return toolError("%s is a directory: use list_dir", a.Path)
			}
			buf := make([]byte, maxReadBytes+1)
			n, err := f.ReadAt(buf, a.Offset)
			if err != nil && n == 0 && !errors.Is(err, io.EOF) {
				return toolError("%s: %v", a.Path, safepath.Unwrap(err))
			}
			out := string(buf[:min(n, maxReadBytes)])
			if n > maxReadBytes {
				out += fmt.Sprintf("\n[truncated: continue with offset %d]", a.Offset+maxReadBytes)
			}
			return host.Result{Content: out}, nil
		},
	}
	list := host.GoTool{
		Name:        "list_dir",
		Title:       "List directory",
		Annotations: &manifest.Annotations{ReadOnlyHint: yes, OpenWorldHint: no},
		Description: "List a directory of the workspace (names; directories end in /).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{` + pathParam + `}}`),
		Call: func(_ context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Path string `json:"path"`
			}
			r, p, msg := at(raw, &a, &a.Path)
			if msg != "" {
				return toolError("%s", msg)
			}
			defer r.Close()
			entries, err := fs.ReadDir(r.FS(), p)
			if err != nil {
				return toolError("%s: %v", a.Path, safepath.Unwrap(err))
			}
			var b strings.Builder
			for i, e := range entries {
				if i == maxListEntries {
					fmt.Fprintf(&b, "[%d more]\n", len(entries)-i)
					break
				}
				name := e.Name()
				if e.IsDir() {
					name += "/"
				}
				b.WriteString(name + "\n")
			}
			return host.Result{Content: strings.TrimRight(b.String(), "\n")}, nil
		},
	}
	grep := host.GoTool{
		Name:        "grep",
		Title:       "Search files",
		Annotations: &manifest.Annotations{ReadOnlyHint: yes, OpenWorldHint: no},
		Description: "Search the workspace's text files for a regular expression (RE2 syntax); returns path:line: text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression"},` +
			pathParam + `},"required":["pattern"]}`),
		Call: func(ctx context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Pattern string `json:"pattern"`
				Path    string `json:"path"`
			}
			r, p, msg := at(raw, &a, &a.Path)
			if msg != "" {
				return toolError("%s", msg)
			}
			defer r.Close()
			re, err := regexp.Compile(a.Pattern)
			if err != nil {
				return toolError("bad pattern: %v", err)
			}
			var hits []string
			err = fs.WalkDir(r.FS(), p, func(name string, d fs.DirEntry, err error) error {
				if err != nil || ctx.Err() != nil {
					return ctx.Err()
				}
				if d.IsDir() || len(hits) >= maxGrepMatches {
					return nil
				}
				info, err := d.Info()
				if err != nil || !info.Mode().IsRegular() || info.Size() > maxGrepFile {
					return nil
				}
				data, err := fs.ReadFile(r.FS(), name)
				if err != nil || bytes.IndexByte(data, 0) >= 0 { // unreadable or binary
					return nil
				}
				sc := bufio.NewScanner(bytes.NewReader(data))
				sc.Buffer(nil, 1<<20)
				for line := 1; sc.Scan() && len(hits) < maxGrepMatches; line++ {
					if re.Match(sc.Bytes()) {
						hits = append(hits, fmt.Sprintf("%s:%d: %s", name, line, truncate(sc.Text(), 300)))
					}
				}
				return nil
			})
			if err != nil {
				return toolError("grep: %v", safepath.Unwrap(err))
			}
			if len(hits) == 0 {
				return host.Result{Content: "no match"}, nil
			}
			out := strings.Join(hits, "\n")
			if len(hits) == maxGrepMatches {
				out += fmt.Sprintf("\n[stopped at %d matches]", maxGrepMatches)
			}
			return host.Result{Content: out}, nil
		},
	}
	return []host.GoTool{read, list, grep}, nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Skills returns the skill tool over dir: each skill is a Markdown file
// (NAME.md, or NAME/SKILL.md) whose front matter gives name and
// description. Without a name the tool lists them; with one it loads it.
func Skills(dir string) (host.GoTool, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return host.GoTool{}, fmt.Errorf("builtin: skills directory %s is not a directory", dir)
	}
	return host.GoTool{
		Name:        "skill",
		Title:       "Skills",
		Annotations: &manifest.Annotations{ReadOnlyHint: yes, OpenWorldHint: no},
		Description: "List the available skills (instructions for particular jobs), or load one by name.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The skill to load; omit to list them"}}}`),
		Call: func(_ context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Name string `json:"name"`
			}
			if err := decode(raw, &a); err != nil {
				return toolError("%v", err)
			}
			skills, err := loadSkills(dir)
			if err != nil {
				return toolError("skills: %v", err)
			}
			if a.Name == "" {
				if len(skills) == 0 {
					return host.Result{Content: "no skills are installed"}, nil
				}
				var b strings.Builder
				for _, s := range skills {
					fmt.Fprintf(&b, "- %s: %s\n", s.name, s.description)
				}
				return host.Result{Content: strings.TrimRight(b.String(), "\n")}, nil
			}
			for _, s := range skills {
				if s.name == a.Name {
					return host.Result{Content: s.body}, nil
				}
			}
			var names []string
			for _, s := range skills {
				names = append(names, s.name)
			}
			return toolError("no skill %q (there are: %s)", a.Name, strings.Join(names, ", "))
		},
	}, nil
}

type skill struct{ name, description, body string }

func loadSkills(dir string) ([]skill, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := fs.ReadDir(r.FS(), ".")
	if err != nil {
		return nil, err
	}
	var out []skill
	for _, e := range entries {
		file := e.Name()
		if e.IsDir() {
			file = e.Name() + "/SKILL.md"
		} else if !strings.HasSuffix(file, ".md") {
			continue
		}
		data, err := fs.ReadFile(r.FS(), file)
		if err != nil || len(data) > 1<<20 {
			continue
		}
		s := skill{name: strings.TrimSuffix(e.Name(), ".md"), body: string(data)}
		if rest, ok := strings.CutPrefix(string(data), "---\n"); ok {
			if fm, body, ok := strings.Cut(rest, "\n---"); ok {
				s.body = strings.TrimLeft(body, "-\n")
				for _, line := range strings.Split(fm, "\n") {
					k, v, _ := strings.Cut(line, ":")
					switch strings.TrimSpace(k) {
					case "name":
						s.name = strings.Trim(strings.TrimSpace(v), `"'`)
					case "description":
						s.description = strings.Trim(strings.TrimSpace(v), `"'`)
					}
				}
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// Shell returns the shell tool: it runs a command with sh -c in dir, with
// a timeout and an output cap. It is NOT sandboxed: it runs with the host's
// rights. Only operators enable it.
func Shell(dir string, timeout time.Duration, maxOutput int) host.GoTool {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if maxOutput <= 0 {
		maxOutput = 64 << 10
	}
	return host.GoTool{
		Name:        "shell",
		Title:       "Shell command",
		Annotations: &manifest.Annotations{ReadOnlyHint: no, DestructiveHint: yes, IdempotentHint: no, OpenWorldHint: yes},
		Description: fmt.Sprintf("Run a shell command in the workspace (timeout %s, output capped). Prefer other tools when they can do the job.", timeout),
		Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command line, run with sh -c"}},"required":["command"]}`),
		Call: func(ctx context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Command string `json:"command"`
			}
			if err := decode(raw, &a); err != nil {
				return toolError("%v", err)
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", a.Command)
			cmd.Dir = dir
			killGroup(cmd) // the command's children die with it
			cmd.WaitDelay = time.Second
			out := &capped{max: maxOutput}
			cmd.Stdout, cmd.Stderr = out, out
			err := cmd.Run()
			text := out.String()
			if ctx.Err() == context.DeadlineExceeded {
				return toolError("%s\n[killed after %s]", text, timeout)
			}
			if err != nil {
				return toolError("%s\n[%v]", text, err)
			}
			return host.Result{Content: text}, nil
		},
	}
}

// capped keeps the first max bytes written and notes the rest.
type capped struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := max(c.max-c.buf.Len(), 0); room < len(p) {
		c.dropped += len(p) - room
		p = p[:room]
	}
	c.buf.Write(p)
	return n, nil // never a short write: the command must not fail for it
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.buf.String()
	if c.dropped > 0 {
		s += fmt.Sprintf("\n[%d more bytes of output dropped]", c.dropped)
	}
	return s
}

// Hint values for annotations.
var (
	yes = ptr(true)
	no  = ptr(false)
)

func ptr(b bool) *bool { return &b }
