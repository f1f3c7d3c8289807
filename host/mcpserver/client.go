package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/sdk/abi"
)

// A plugin granted the "client" capability reaches the MCP client its
// call came from (host/wasm/client.go): callClient is that client for one
// tools/call. Its notifications and requests go out with the call's
// context, so the SDK relates them to the call: over streamable HTTP they
// travel on the call's own POST stream, before its result; over stdio,
// before the result's line. The limits (sizes, counts per call, the
// call's deadline) are host/wasm's; what is checked here is what only the
// session knows: whether the client offers sampling and elicitation.

// callClient is the MCP client of one tools/call. It is safe for
// concurrent use (the session's methods are).
type callClient struct {
	ss    *mcp.ServerSession
	token any // the call's _meta.progressToken; nil: none
}

var _ wasm.Client = (*callClient)(nil)

// withClient binds the client of a tools/call (its session and params)
// to the context its tool runs with.
func withClient(ctx context.Context, ss *mcp.ServerSession, params interface{ GetProgressToken() any }) context.Context {
	if ss == nil {
		return ctx
	}
	c := &callClient{ss: ss}
	if params != nil {
		c.token = params.GetProgressToken()
	}
	return wasm.WithClient(ctx, c)
}

// clientName is how errors name the client: its name and version from
// initialize (what the client chose to say, quoted and cut short).
func (c *callClient) clientName() string {
	if p := c.ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		name := strings.TrimSpace(p.ClientInfo.Name + " " + p.ClientInfo.Version)
		if r := []rune(name); len(r) > 64 {
			name = string(r[:64]) + "…"
		}
		return fmt.Sprintf("the MCP client (%s)", strings.Join(strings.Fields(name), " "))
	}
	return "the MCP client"
}

func (c *callClient) Log(ctx context.Context, level, logger string, data json.RawMessage) error {
	return c.ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: data})
}

func (c *callClient) Progress(ctx context.Context, progress, total float64, message string) (bool, error) {
	if c.token == nil {
		return false, nil
	}
	err := c.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: progress, Total: total,
		Message: message})
	return err == nil, err
}

func (c *callClient) Sample(ctx context.Context, r *abi.ClientSampleRequest) (*abi.ClientSampleReply, error) {
	if !clientSamples(c.ss) {
		return nil, fmt.Errorf(`%s does not offer sampling (its initialize declared no "sampling" capability)`, c.clientName())
	}
	p := &mcp.CreateMessageParams{SystemPrompt: r.SystemPrompt, MaxTokens: int64(r.MaxTokens), StopSequences: r.Stop}
	if r.Temperature != nil {
		p.Temperature = *r.Temperature
	}
	for _, m := range r.Messages {
		p.Messages = append(p.Messages, &mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: &mcp.TextContent{Text: m.Text}})
	}
	res, err := c.ss.CreateMessage(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.clientName(), err)
	}
	t, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("%s answered with %s content; only text reaches a plugin", c.clientName(), contentType(res.Content))
	}
	return &abi.ClientSampleReply{Role: string(res.Role), Text: t.Text, Model: res.Model, StopReason: res.StopReason}, nil
}

func (c *callClient) Elicit(ctx context.Context, r *abi.ClientElicitRequest) (*abi.ClientElicitReply, error) {
	if p := c.ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil, fmt.Errorf(`%s does not offer elicitation (its initialize declared no "elicitation" capability)`, c.clientName())
	}
	res, err := c.ss.Elicit(ctx, &mcp.ElicitParams{Message: r.Message, RequestedSchema: r.Schema})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.clientName(), err)
	}
	out := &abi.ClientElicitReply{Action: res.Action}
	switch res.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, fmt.Errorf("%s answered with action %q (not accept, decline or cancel)", c.clientName(), res.Action)
	}
	if res.Action == "accept" && res.Content != nil {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return nil, errors.New("the user's answer could not be encoded")
		}
		out.Content = b
	}
	return out, nil
}

// contentType names a content block's type for messages.
func contentType(c mcp.Content) string {
	switch c.(type) {
	case *mcp.ImageContent:
		return "image"
	case *mcp.AudioContent:
		return "audio"
	case nil:
		return "no"
	}
	return fmt.Sprintf("%T", c)
}
