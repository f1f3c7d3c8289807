// Command wasm is the echo tool as a Toolshed plugin (a WebAssembly
// reactor built with the SDK).
package main

import (
	"github.com/toolshed/toolshed/bench/echo"
	"github.com/toolshed/toolshed/sdk"
)

func init() {
	sdk.Handle("echo", func(a echo.Args) (sdk.Result, error) { return sdk.JSON(a), nil })
}

func main() {}
