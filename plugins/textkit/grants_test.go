package main

import "github.com/toolshed/toolshed/host/wasm"

var plugintestGrants = wasm.Grants{Log: true}
