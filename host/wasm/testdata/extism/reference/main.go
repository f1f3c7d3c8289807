// Command extismreference runs Extism plugins through Extism's own Go
// runtime (github.com/extism/go-sdk), for host/wasm's reference test: it
// reads cases as JSON from stdin — each a module file, a function, the
// inputs of successive calls on one plugin instance, its config — and
// writes each call's return code, output and error as JSON. It is its own
// module so that the main module never depends on go-sdk.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	extism "github.com/extism/go-sdk"
)

type refCase struct {
	Wasm   string            `json:"wasm"`
	Func   string            `json:"func"`
	Inputs []string          `json:"inputs"`
	Config map[string]string `json:"config"`
}

type refCall struct {
	RC     uint32 `json:"rc"`
	Output string `json:"output"`
	Error  string `json:"error"`
}

func main() {
	var cases []refCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	var out [][]refCall
	for _, c := range cases {
		m := extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: c.Wasm}}, Config: c.Config}
		p, err := extism.NewPlugin(ctx, m, extism.PluginConfig{EnableWasi: true}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, c.Wasm, err)
			os.Exit(2)
		}
		var calls []refCall
		for _, in := range c.Inputs {
			rc, res, err := p.Call(c.Func, []byte(in))
			call := refCall{RC: rc, Output: string(res)}
			if err != nil {
				call.Error = err.Error()
			}
			calls = append(calls, call)
		}
		p.Close(ctx)
		out = append(out, calls)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
