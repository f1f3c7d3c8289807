// Command cli is the echo tool as an executable started once per call,
// the way CLI tools and go-plugin style plugins run: arguments on stdin,
// the result on stdout.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/toolshed/toolshed/bench/echo"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err == nil {
		var out []byte
		if out, err = echo.Call(in); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}
