//go:build !wasip1

package sdk

import "embed"

// Source is this package's source and its abi package's (tests aside, as
// they come), for "toolshed plugins new", which writes them into a new
// plugin's folder so that the plugin builds without a checkout of the
// module. It is not in WebAssembly builds: a plugin does not carry it.
//
//go:embed *.go abi/*.go
var Source embed.FS
