//go:build toolshed_bundle

package bundled

import "embed"

// files: every manifest, module and data file of the catalog. A pattern
// that matches nothing fails the build, so a binary built with the tag
// always carries the modules.
//
//go:embed *.json *.wasm glossary-data
var files embed.FS

const embedded = true
