package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/internal/scripted"
	"github.com/toolshed/toolshed/internal/wasmbuild"
)

// TestServeMemoryBudget: toolshed serve with server.instance_memory_mb
// 1024 (from the environment), eight MCP sessions each asking a plugin
// for 200 MiB and staying open. Serve's peak RSS stays under its idle RSS
// + 1,024 + 256 MiB, the sessions past the budget get a tool error that
// names it, and once two sessions close a new one gets its 200 MiB.
func TestServeMemoryBudget(t *testing.T) {
	bin := hostileBinary(t)
	e := newHostileEnv(t, bin)
	e.plugin("hog.json", "hog", wat(t, wasmbuild.GrowWAT(200)), map[string]int{"max_memory_mb": 256}, nil, "hog")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--plugins", e.plugins, "--no-time", "--no-todo")
	cmd.Dir = e.root
	// reclaim_idle is long: a slow machine must not make the first
	// sessions idle enough to be reclaimed (TestReclaimIdle covers that).
	cmd.Env = append(append(cmd.Environ(), e.env...), "TOOLSHED_SERVER_INSTANCE_MEMORY_MB=1024", "TOOLSHED_SERVER_RECLAIM_IDLE=1h")
	logs := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: logs}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if url == "" {
		t.Fatalf("serve did not start: %s", logs)
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	idle, ok := procmem.Field(status, "VmRSS")
	if !ok {
		t.Skip("no /proc to read the RSS from")
	}
	open := func() *mcp.ClientSession {
		cs, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, "")
		if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "hog"}); isErr || !strings.Contains(text, "hog") {
			t.Fatalf("tool_search: %q", text)
		}
		return cs
	}
	hog := func(cs *mcp.ClientSession) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hog", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("hog: %v", err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	var sessions []*mcp.ClientSession
	served, refused := 0, 0
	for i := range 8 {
		cs := open()
		sessions = append(sessions, cs)
		text, isErr := hog(cs)
		switch {
		case !isErr && text == "ok":
			served++
		case isErr && strings.Contains(text, "plugin memory budget"):
			refused++
		default:
			t.Fatalf("session %d: %q (error %v)", i, text, isErr)
		}
	}
	peak, _ := procmem.Field(status, "VmHWM")
	t.Logf("idle RSS %d MiB, peak %d MiB; %d sessions got 200 MiB, %d were refused", idle>>20, peak>>20, served, refused)
	if limit := idle + (1024+256)<<20; peak > limit {
		t.Errorf("peak RSS %d MiB is over idle %d MiB + 1,024 + 256 MiB", peak>>20, idle>>20)
	}
	if served < 4 || served > 5 || refused != 8-served {
		t.Errorf("%d sessions served, %d refused; want 4 or 5 served (1,024 MiB / 200 MiB) and the rest refused", served, refused)
	}
	for _, cs := range sessions[:2] {
		cs.Close() // DELETE: its instances go
	}
	if text, isErr := hog(open()); isErr || text != "ok" {
		t.Fatalf("a new session after two closed: %q (error %v)", text, isErr)
	}
	if peak, _ := procmem.Field(status, "VmHWM"); peak > idle+(1024+256)<<20 {
		t.Errorf("peak RSS %d MiB is over idle %d MiB + 1,024 + 256 MiB", peak>>20, idle>>20)
	}
}

// TestServeKeyMemoryShare: with two API keys, one key's session stops at
// its share of the plugin memory budget (server.per_key.instance_memory_mb)
// through serve's wiring (the request's key, its session's instances),
// with a tool error the model reads; the other key still gets its own.
func TestServeKeyMemoryShare(t *testing.T) {
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	e := newHostileEnv(t, "")
	e.plugin("hog.json", "hog", wat(t, wasmbuild.GrowWAT(200)), map[string]int{"max_memory_mb": 512}, nil, "hog", "hogAgain")
	s := startServe(t, &scripted.Model{}, map[string]string{"server.api_keys": keyA + "," + keyB, "plugins.dir": e.plugins,
		"server.instance_memory_mb": "1024", "server.per_key.instance_memory_mb": "300", "limits.max_memory_mb": "512"})
	ask := func(key, script string) string {
		t.Helper()
		resp, err := s.client(key).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: user(script)})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content
	}
	// Two calls in one session: 200 MiB, then 400 MiB, over A's 300.
	if got := ask(keyA, "use hog with {} to hog then hogAgain with {}"); !strings.Contains(got, "this API key is at its share of the server's plugin memory budget") {
		t.Fatalf("key A's second 200 MiB: %q", got)
	}
	if got := ask(keyB, "use hog with {} to hog"); got != "answer: ok" {
		t.Fatalf("key B's 200 MiB: %q", got)
	}
	if st := s.server.runtime.MemoryStats(); st.PerTenant != 300<<20 || st.Budget != 1024<<20 {
		t.Fatalf("serve's budget and share: %+v", st)
	}
}

// TestServeMemoryWait: with server.instance_memory_wait, an MCP session
// whose plugin instance finds no room in the budget waits for it, through
// serve's wiring, and is served once the session holding the room
// closes; the wait is counted.
func TestServeMemoryWait(t *testing.T) {
	if config.MaxInstanceMemoryWait != wasm.MaxMemoryWait {
		t.Fatalf("config's maximum wait %s is not the runtime's %s", config.MaxInstanceMemoryWait, wasm.MaxMemoryWait)
	}
	e := newHostileEnv(t, "")
	e.plugin("hog.json", "hog", wat(t, wasmbuild.FixedWAT(48)), nil, nil, "hog")
	s := startServe(t, &scripted.Model{}, map[string]string{"plugins.dir": e.plugins, "search.mode": "keyword",
		"server.instance_memory_mb": "64", "server.instance_memory_wait": "1m", "server.reclaim_idle": "1h"})
	if st := s.server.runtime.MemoryStats(); st.Wait != time.Minute || st.Budget != 64<<20 {
		t.Fatalf("serve's budget and wait: %+v", st)
	}
	open := func() *mcp.ClientSession {
		cs, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, "")
		if text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "hog"}); isErr || !strings.Contains(text, "hog") {
			t.Fatalf("tool_search: %q", text)
		}
		return cs
	}
	// Both sessions discover hog, so both prepare an instance in the
	// background and race for the room of one: whichever wins, the
	// first session's call is served (a prepared instance never called
	// yields its room to a call: wasm.Session.Prepare).
	first, second := open(), open()
	if text, isErr := callText(t, first, "hog", map[string]any{}); isErr || text != "ok" {
		t.Fatalf("the first session's 48 MiB: %q (error %v)", text, isErr)
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := second.CallTool(ctx, &mcp.CallToolParams{Name: "hog", Arguments: map[string]any{}})
		done <- answer{res, err}
	}()
	for deadline := time.Now().Add(time.Minute); s.server.runtime.MemoryStats().Waits.Waiting != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second session's call does not wait: %+v", s.server.runtime.MemoryStats())
		}
	}
	first.Close() // DELETE: its instance goes, the waiting call gets the room
	select {
	case a := <-done:
		if a.err != nil || a.res.IsError || a.res.Content[0].(*mcp.TextContent).Text != "ok" {
			t.Fatalf("the waiting session: %v %+v", a.err, a.res)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the waiting session got no answer")
	}
	if st := s.server.runtime.MemoryStats(); st.Waits.Served != 1 || st.Used > st.Budget {
		t.Fatalf("after the wait: %+v", st)
	}
}
