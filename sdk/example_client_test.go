package sdk_test

import (
	"fmt"

	"github.com/toolshed/toolshed/sdk"
)

// A tool that reports its progress to the MCP client and asks the user to
// confirm before it acts (the manifest asks for "client": ["progress",
// "elicit"]). Outside a host, as here, and in a call that did not come
// from an MCP client, the question cannot be asked, and the tool says so
// to the model instead of acting.
func Example_client() {
	type args struct {
		Table string `json:"table"`
	}
	sdk.Handle("archiveTable", func(a args) (sdk.Result, error) {
		sdk.Progress(0, 2, "checking "+a.Table) // sent only when the client asked for progress
		reply, err := sdk.Elicit("Archive every row of "+a.Table+"?", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"confirm": map[string]any{"type": "boolean", "title": "Archive them", "default": false},
			},
		})
		if err != nil {
			return sdk.Errorf("cannot ask the user to confirm (%v); nothing was archived", err), nil
		}
		if reply.Action != "accept" {
			return sdk.Text("The user did not confirm (%s); nothing was archived.", reply.Action), nil
		}
		sdk.Progress(2, 2, "archived")
		return sdk.Text("Archived %s.", a.Table), nil
	})
	fmt.Println(string(sdk.Dispatch([]byte(`{"tool":"archiveTable","arguments":{"table":"orders"}}`))))
	// Output: {"content":"cannot ask the user to confirm (sdk: not running under a Toolshed host); nothing was archived","is_error":true}
}
