package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host/mcpserver"
	"github.com/toolshed/toolshed/internal/scripted"
)

// mcpClient connects the Go SDK's MCP client; changed receives a value on
// every notifications/tools/list_changed. choose, when set, is the
// client's model answering sampling requests.
func mcpClient(t *testing.T, tr mcp.Transport, choose string) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 8)
	opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}
	if choose != "" {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if !strings.Contains(req.Params.Messages[0].Content.(*mcp.TextContent).Text, "Tools:") {
				t.Errorf("sampling request without a candidate list: %+v", req.Params)
			}
			return &mcp.CreateMessageResult{Model: "client-model", Role: "assistant", Content: &mcp.TextContent{Text: choose}}, nil
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// mcpScenario is the flow every transport must support: list, search,
// list_changed, list again, call the discovered tool.
func mcpScenario(t *testing.T, cs *mcp.ClientSession, changed chan struct{}, query, want string) {
	t.Helper()
	if names := toolNames(t, cs); !slices.Equal(names, []string{"tool_search"}) {
		t.Fatalf("first list: %v", names)
	}
	// Undiscovered tools are refused as in the agent loop.
	if text, isErr := callText(t, cs, "slugify", map[string]any{"text": "A_B"}); !isErr || !strings.Contains(text, "tool_search") {
		t.Fatalf("undiscovered call: %q %v", text, isErr)
	}
	text, isErr := callText(t, cs, "tool_search", map[string]any{"query": query})
	if isErr || !strings.Contains(text, want) {
		t.Fatalf("tool_search: %q", text)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("no notifications/tools/list_changed")
	}
	// The SDK lists tools sorted by name.
	if names := toolNames(t, cs); !slices.Contains(names, want) || !slices.Contains(names, "tool_search") || !slices.IsSorted(names) {
		t.Fatalf("list after search: %v", names)
	}
	args := map[string]any{"text": "Hello_MCP world"}
	text, isErr = callText(t, cs, want, args)
	if isErr || text == "" {
		t.Fatalf("%s: %q", want, text)
	}
	if want == "slugify" && text != "hello-mcp-world" {
		t.Fatalf("slugify: %q", text)
	}
	// Bad arguments come back as a tool error the model can read.
	if text, isErr := callText(t, cs, want, map[string]any{"nope": 1}); !isErr || !strings.Contains(text, "schema") {
		t.Fatalf("bad arguments: %q %v", text, isErr)
	}
}

// TestMCPOverHTTP: the Go SDK's client against /mcp of toolshed serve; two
// sessions keep their discoveries apart.
func TestMCPOverHTTP(t *testing.T) {
	s := startServe(t, &scripted.Model{}, nil)
	cs, changed := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, "")
	if v := cs.InitializeResult().ProtocolVersion; v != mcpserver.ProtocolVersions[0] {
		t.Errorf("protocol %s", v)
	}
	mcpScenario(t, cs, changed, "url slug", "slugify")
	// Another session starts with nothing discovered.
	other, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, "")
	if names := toolNames(t, other); !slices.Equal(names, []string{"tool_search"}) {
		t.Fatalf("second session sees %v", names)
	}
	if _, isErr := callText(t, other, "slugify", map[string]any{"text": "x"}); !isErr {
		t.Fatal("the second session ran a tool the first discovered")
	}
	if !strings.Contains(s.logs.String(), "mcp tool call") {
		t.Error("no log of the MCP calls")
	}
	// Two sessions counted; none left once the clients leave.
	cs.Close()
	other.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := metricsText(t, s.url)
		if strings.Contains(m, `toolshed_sessions_total{front="mcp"} 2`) && strings.Contains(m, `toolshed_sessions_active{front="mcp"} 0`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("MCP session metrics after the clients left:\n%s", grepLines(m, "front=\"mcp\""))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func metricsText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMCPSampling: in LLM mode the client's model chooses, through
// sampling; a client without sampling gets keyword search.
func TestMCPSampling(t *testing.T) {
	s := startServe(t, &scripted.Model{}, map[string]string{"search.mode": "llm"})
	cs, changed := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, `{"tools": ["textStats"]}`)
	text, isErr := callText(t, cs, "tool_search", map[string]any{"query": "url slug"})
	if isErr || !strings.Contains(text, "textStats") || strings.Contains(text, "slugify") {
		t.Fatalf("sampled search: %q", text)
	}
	<-changed
	if names := toolNames(t, cs); !slices.Equal(names, []string{"textStats", "tool_search"}) {
		t.Fatalf("list %v", names)
	}
	// No sampling: keyword hits.
	plain, _ := mcpClient(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, "")
	text, isErr = callText(t, plain, "tool_search", map[string]any{"query": "url slug"})
	if isErr || !strings.Contains(text, "slugify") {
		t.Fatalf("keyword fallback: %q", text)
	}
	if len(s.model.Requests()) != 0 {
		t.Fatal("MCP search asked the server's upstream model")
	}
}

// TestMCPOverStdio: toolshed mcp speaks MCP on stdin/stdout.
func TestMCPOverStdio(t *testing.T) {
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	t.Setenv("TOOLSHED_PLUGINS_CACHE_DIR", testCacheDir)
	t.Setenv("TOOLSHED_LIMITS_COMPILE_TIMEOUT", "3m") // a loaded machine, or the race detector, compiles slowly
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stdin = inR
	defer func() { stdin = strings.NewReader("") }()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		code := run([]string{"mcp", "--plugins", dir, "--no-time", "--no-todo"}, outW, &errb)
		_ = code
		if errb.Len() > 0 {
			t.Logf("stderr: %s", errb.String())
		}
		outW.Close()
		done <- code
	}()
	cs, changed := mcpClient(t, &mcp.IOTransport{Reader: outR, Writer: inW}, "")
	mcpScenario(t, cs, changed, "url slug", "slugify")
	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("toolshed mcp exited %d", code)
		}
	case <-time.After(time.Minute): // for an event that never comes (on time: milliseconds)
		t.Fatal("toolshed mcp did not end when the client left")
	}
}

// TestMCPBinary: the built toolshed binary as an MCP client starts it, over
// its real stdin and stdout (nothing but MCP on stdout).
func TestMCPBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toolshed")
	// Built as make build builds, so that the build cache serves it.
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, _ := textkitDir(t)
	runCLI("plugins", "pin", filepath.Join(dir, "textkit.json"))
	cmd := exec.Command(bin, "mcp", "--plugins", dir, "--no-time", "--no-todo")
	cmd.Env = append(os.Environ(), "TOOLSHED_PLUGINS_CACHE_DIR="+testCacheDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, changed := mcpClient(t, &mcp.CommandTransport{Command: cmd}, "")
	mcpScenario(t, cs, changed, "url slug", "slugify")
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v (stderr: %s)", err, stderr.String())
	}
}
