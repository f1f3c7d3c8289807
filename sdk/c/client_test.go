package csdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
)

// mcpClient is a wasm.Client that answers every request and records what
// reached it.
type mcpClient struct {
	mu   sync.Mutex
	seen []string
}

func (c *mcpClient) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s)
}

func (c *mcpClient) Log(_ context.Context, level, _ string, data json.RawMessage) error {
	c.add(level + " " + string(data))
	return nil
}

func (c *mcpClient) Progress(context.Context, float64, float64, string) (bool, error) {
	c.add("progress")
	return true, nil
}

func (c *mcpClient) Sample(_ context.Context, r *abi.ClientSampleRequest) (*abi.ClientSampleReply, error) {
	c.add("sample " + r.Messages[0].Text)
	return &abi.ClientSampleReply{Role: "assistant", Text: "hi \"you\""}, nil
}

func (c *mcpClient) Elicit(_ context.Context, r *abi.ClientElicitRequest) (*abi.ClientElicitReply, error) {
	c.add("elicit " + string(r.Schema))
	return &abi.ClientElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"Ada"}`)}, nil
}

// TestClientHelpers: the C SDK's client helpers reach the call's MCP
// client with what they were given, and read its answers; without a
// grant each fails with the host's reason.
func TestClientHelpers(t *testing.T) {
	p := kit(t, wasm.Grants{Client: []string{"log", "progress", "sample", "elicit"}})
	c := &mcpClient{}
	res, err := p.CallClient(c, "client", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(res.Structured, &got)
	if got["log"] != "ok" || got["progress"] != "ok" || got["sent"] != float64(1) || got["sample"] != "ok" ||
		got["text"] != `hi "you"` || got["elicit"] != "ok" || got["reply"] != `{"action":"accept","content":{"name":"Ada"}}` {
		t.Fatalf("with a client: %s", res.Structured)
	}
	want := `info "hello \"client\" from C"|progress|sample say "hi"|elicit {"type":"object","properties":{"name":{"type":"string"}}}`
	if strings.Join(c.seen, "|") != want {
		t.Fatalf("the client saw %q", c.seen)
	}
	denied := kit(t, wasm.Grants{})
	res = denied.Call("client", map[string]any{})
	json.Unmarshal(res.Structured, &got)
	if got["sample"] != "failed" || !strings.Contains(got["text"].(string), `"client.sample" is not granted`) || got["sent"] != float64(0) {
		t.Fatalf("without grants: %s", res.Structured)
	}
}
