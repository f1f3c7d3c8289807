// Package bundled is the bundled catalog as the toolshed binary carries it:
// the manifests of this folder, the modules "make plugins" builds beside
// them, the folder's grants (_grants.json) and the plugins' data. It is not
// a library: only cmd/toolshed reads it, when no other catalog is given or
// found.
//
// The files are embedded only in a binary built with the tag
// toolshed_bundle ("make" builds bin/toolshed so, after the modules): a
// plain "go build" must work before any module exists, and then Files is
// empty. The package holds no state; reading Files is safe for concurrent
// use.
package bundled

import "io/fs"

// Files returns the bundled catalog's files (the folder's layout: NAME.json,
// NAME.wasm, _grants.json, data folders) and whether this binary carries
// them.
func Files() (fs.FS, bool) {
	if !embedded {
		return nil, false
	}
	return files, true
}
