// Package echo is the tool logic the call-cost benchmark runs four ways:
// as a native Go function, in a WebAssembly plugin (echo/wasm) and in an
// executable started once per call (echo/cli). It decodes a ~100-byte JSON
// object and returns it as a tool result, the work of a small tool.
package echo

import (
	"encoding/json"

	"github.com/toolshed/toolshed/sdk/abi"
)

// Args are the tool's arguments.
type Args struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

// Example is a ~100-byte argument object.
const Example = `{"name":"quarterly revenue report","count":42,"tags":["finance","q3","revenue","draft","internal"]}`

// Call runs the tool natively: arguments in, the ABI result's JSON out,
// as the SDK builds it for sdk.JSON(args).
func Call(raw []byte) ([]byte, error) {
	var a Args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	out, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	return json.Marshal(abi.Result{Content: string(out), Structured: out})
}
