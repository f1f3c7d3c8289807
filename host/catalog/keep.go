package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// Keeping admitted modules (Options.KeepModules). A plugin is admitted for
// the module bytes its manifest pins; calls must get those bytes, whatever
// happens to the .wasm file afterwards. An operator who replaces the module
// before the manifest (or a copy that lands file by file) would otherwise
// leave a listed plugin whose every call fails its sha256 check. So the
// bytes checked at admission are kept, named by their sha256, and
// ReadModule reads the kept copy: the version a snapshot lists is the
// version its calls run. Until the manifest pins the new module, the plugin
// says so (Plugin.Pending).

// moduleStamp identifies a module file as it was when admitted: a later
// load that finds the same stamp need not hash the file again.
type moduleStamp struct {
	size  int64
	mtime time.Time
}

func stampOf(fsys fs.FS, name string) (moduleStamp, bool) {
	st, err := fs.Stat(fsys, name)
	if err != nil || !st.Mode().IsRegular() {
		return moduleStamp{}, false
	}
	return moduleStamp{st.Size(), st.ModTime()}, true
}

// keep stores code (already checked against the pin) as DIR/SHA256.wasm
// and makes p read it from there; with dir "", or if the copy cannot be
// written, p keeps the bytes in memory.
func (p *Plugin) keep(dir string, code []byte) {
	if dir == "" {
		p.keptCode = code
		return
	}
	name := p.Manifest.SHA256 + ".wasm"
	p.kept = filepath.Join(dir, name)
	if st, err := os.Lstat(p.kept); err == nil && st.Mode().IsRegular() && st.Size() == int64(len(code)) {
		return // ReadModule checks its sha256 at each read
	}
	if err := writeAtomic(dir, name, code); err != nil {
		p.kept, p.keptCode = "", code
	}
}

// keepFrom makes p read the module its predecessor admitted (the same pin).
func (p *Plugin) keepFrom(old *Plugin) {
	p.kept, p.keptCode, p.stamp = old.kept, old.keptCode, old.stamp
}

// keptInDir points p at a copy kept by an earlier load (another process),
// if dir holds one.
func (p *Plugin) keptInDir(dir string) bool {
	if dir == "" {
		return false
	}
	k := filepath.Join(dir, p.Manifest.SHA256+".wasm")
	if st, err := os.Lstat(k); err != nil || !st.Mode().IsRegular() {
		return false
	}
	p.kept = k
	return true
}

// checkPending compares the module file with the one admitted: when it
// changed and no longer matches the pin, the update is half written, and
// p.Pending says so (the kept module still serves).
func (p *Plugin) checkPending() {
	st, ok := stampOf(p.fsys, path.Clean(p.name))
	if ok && st == p.stamp {
		return
	}
	if !ok {
		p.Pending = fmt.Sprintf("module %s is gone; calls run the admitted module (sha256 %s) until a manifest and its module agree again",
			p.ModulePath, p.Manifest.SHA256)
		return
	}
	if _, err := p.readOriginal(); err != nil {
		p.Pending = fmt.Sprintf("%v: an update half written? calls run the admitted module (version %s) until the manifest pins the new one",
			err, p.Manifest.Version)
		return
	}
	p.stamp = st // touched, same bytes
}

// readKept reads the kept copy and checks it against the pin.
func (p *Plugin) readKept() ([]byte, error) {
	if p.keptCode != nil {
		return p.keptCode, nil
	}
	f, err := os.Open(p.kept)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != p.Manifest.SHA256 {
		return nil, fmt.Errorf("the kept copy %s has sha256 %s", p.kept, got)
	}
	return data, nil
}

// writeAtomic writes dir/name through a temporary file renamed into place,
// so a concurrent reader sees the whole file or none.
func writeAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}
