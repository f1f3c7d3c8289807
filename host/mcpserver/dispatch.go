package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/internal/names"
)

// The dispatcher (Options.Dispatcher) is for clients that never refresh
// their tool list on notifications/tools/list_changed: the tools
// tool_search finds are then in the session but not in the client's list,
// so the model cannot call them. call_tool is in the list from the start
// and calls them by name. It reaches only the tools tool_search found in
// this session, as a direct call would: the catalog stays behind search.
// The trade-off (docs/SERVING.md): the model sees a found tool's schema
// only in tool_search's result, not as a function definition, so its
// arguments are checked when the call is made rather than shaped by the
// client beforehand, and clients show one generic tool where they would
// show each.

const dispatcherDescription = "Call a tool that " + host.ToolSearchName + " found in this session, by its name, " +
	"with its arguments (an object matching the parameters " + host.ToolSearchName + " listed). " +
	"Use it when a found tool does not appear in your tool list."

var dispatcherParams = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"The tool's name, as tool_search gave it"},` +
	`"arguments":{"type":"object","description":"The tool's arguments"}},"required":["name"]}`)

// addDispatcher puts call_tool in the session's list.
func (ms *session) addDispatcher() {
	ms.mu.Lock()
	ms.registered[names.CallTool] = true
	ms.mu.Unlock()
	ms.srv.AddTool(&mcp.Tool{Name: names.CallTool, Title: "Call a found tool", Description: dispatcherDescription,
		InputSchema: dispatcherParams}, ms.dispatch)
}

func (ms *session) dispatch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &a); err != nil || a.Name == "" {
		return toolError(names.CallTool + ` needs {"name": TOOL, "arguments": {...}}`), nil
	}
	found := ms.hs.Discovered()
	if !slices.Contains(found, a.Name) {
		list := "none yet"
		if len(found) > 0 {
			list = strings.Join(found, ", ")
		}
		return toolError(fmt.Sprintf("%s calls only tools %s found in this session, and %q is not one (found: %s). "+
			"Call %s first; call %s and the always-on tools directly.", names.CallTool, host.ToolSearchName, a.Name, list,
			host.ToolSearchName, host.ToolSearchName)), nil
	}
	start := time.Now()
	res, _ := ms.hs.Call(withClient(ctx, req.Session, req.Params), a.Name, toolArgs(a.Arguments))
	ms.front.opts.Metrics.ObserveCall(&host.ToolCallRecord{Name: a.Name, Plugin: ms.hs.PluginOf(a.Name), IsError: res.IsError,
		Duration: time.Since(start)})
	return ms.front.result(res), nil
}

// toolArgs is a call's arguments as the host takes them: absent or null
// (a client may send either for a tool without parameters) is {}.
func toolArgs(raw json.RawMessage) string {
	if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
		return string(raw)
	}
	return "{}"
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}
