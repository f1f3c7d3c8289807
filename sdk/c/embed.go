// Package csdk holds the Toolshed plugin SDK for C (toolshed.h,
// toolshed.c): ABI version 1 for plugins built with clang and wasi-libc.
// The Go package only embeds the two files, so that "toolshed plugins new
// --lang c" can write them into a new plugin's folder; docs/SDK.md
// documents the C API.
package csdk

import "embed"

// Files are toolshed/toolshed.h and toolshed/toolshed.c.
//
//go:embed toolshed/toolshed.h toolshed/toolshed.c
var Files embed.FS
