//go:build !toolshed_bundle

package bundled

import "embed"

// files is empty without the tag toolshed_bundle.
var files embed.FS

const embedded = false
