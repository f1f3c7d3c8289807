package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/toolshed/toolshed/host/catalog"
)

// verifiedFile remembers, across runs, the modules that passed admission
// (catalog.VerifiedModules), so that "toolshed search" does not hash
// every module of the catalog each time it starts: a module is known when
// its file has the identity it had when it passed (fileID: device, inode,
// size, modification and change times; a write, a rename over it or a
// chmod changes the change time, which no one can set back) and the
// manifest pins the same sha256. A symbolic link is never known. The
// sandbox does not rely on it: compiling a module hashes it again.
//
// A verifiedFile is safe for concurrent use; save writes it back.
type verifiedFile struct {
	path string
	mu   sync.Mutex
	m    map[string]verifiedEntry // absolute module path → entry
	dirt bool
}

type verifiedEntry struct {
	SHA256 string `json:"sha256"`
	ID     fileID `json:"id"`
}

// maxVerified bounds the file: past it, the entries start over.
const maxVerified = 4096

var _ catalog.VerifiedModules = (*verifiedFile)(nil)

// openVerified reads the cache file (a missing or broken one is empty).
func openVerified(path string) *verifiedFile {
	v := &verifiedFile{path: path, m: map[string]verifiedEntry{}}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &v.m) != nil {
		v.m = map[string]verifiedEntry{}
	}
	return v
}

func (v *verifiedFile) Known(p *catalog.Plugin) bool {
	abs, err := filepath.Abs(p.ModulePath)
	if err != nil {
		return false
	}
	id, ok := identify(abs)
	if !ok {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, found := v.m[abs]
	return found && e.SHA256 == p.Manifest.SHA256 && e.ID == id
}

func (v *verifiedFile) Remember(p *catalog.Plugin) {
	abs, err := filepath.Abs(p.ModulePath)
	if err != nil {
		return
	}
	id, ok := identify(abs)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= maxVerified {
		v.m = map[string]verifiedEntry{}
	}
	v.m[abs] = verifiedEntry{SHA256: p.Manifest.SHA256, ID: id}
	v.dirt = true
}

// save writes the file back if it changed (best effort: a cache).
func (v *verifiedFile) save() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.dirt {
		return
	}
	b, err := json.Marshal(v.m)
	if err != nil || os.MkdirAll(filepath.Dir(v.path), 0o700) != nil {
		return
	}
	tmp := v.path + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil && os.Rename(tmp, v.path) == nil {
		v.dirt = false
	}
}

// verifiedPath is the cache file: $XDG_CACHE_HOME/toolshed/verified.json
// (the user cache directory); "" when there is none.
func verifiedPath() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "toolshed", "verified.json")
}
