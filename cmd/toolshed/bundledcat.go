package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	bundledcatalog "github.com/toolshed/toolshed/plugin-manifests"
)

// The bundled catalog a binary built by "make" carries (package bundled)
// is written out once to the user's cache, in a folder named by its
// content, and used from there like any plugin folder: manifests, modules,
// the folder's grants and the data its mounts name are files, as every
// command and the runtime expect.
//
// The folder's name is the sha256 of every file but the modules (names
// and bytes), and the manifests pin each module's sha256, so the name
// covers the modules too. At each use the small files are compared with
// the binary's copy and a missing or changed one writes the folder again;
// a changed module fails admission (its sha256), like any module.

// embeddedCatalog returns the folder holding the binary's bundled catalog,
// writing it first if needed; ok is false when the binary carries none.
func embeddedCatalog() (dir string, ok bool, err error) {
	files, ok := bundledcatalog.Files()
	if !ok {
		return "", false, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", true, fmt.Errorf("the bundled catalog needs a cache folder to be written to: %w", err)
	}
	dir, err = writeBundled(files, filepath.Join(cache, "toolshed", "bundled"))
	return dir, true, err
}

// bundledFile is one file of the bundled catalog.
type bundledFile struct {
	name string // slash-separated, relative to the catalog
	data []byte
}

// readBundled lists the catalog's files, sorted by name.
func readBundled(files fs.FS) ([]bundledFile, error) {
	var out []bundledFile
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		out = append(out, bundledFile{p, b})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// bundledID is the content address of the catalog: the sha256 of every
// file's name and bytes, modules excepted (the manifests pin them).
func bundledID(fsys []bundledFile) string {
	h := sha256.New()
	for _, f := range fsys {
		if strings.HasSuffix(f.name, ".wasm") {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// writeBundled makes root/ID/plugin-manifests hold the catalog and returns
// it. A complete folder is used as it is; an incomplete or changed one is
// replaced. The folder is written beside its final place and renamed into
// it, so a concurrent command sees the whole catalog or none.
func writeBundled(files fs.FS, root string) (string, error) {
	list, err := readBundled(files)
	if err != nil {
		return "", fmt.Errorf("the bundled catalog: %w", err)
	}
	final := filepath.Join(root, bundledID(list))
	dir := filepath.Join(final, bundledName)
	if bundledIntact(dir, list) {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("the bundled catalog: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", fmt.Errorf("the bundled catalog: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range list {
		p := filepath.Join(tmp, bundledName, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("the bundled catalog: %w", err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return "", fmt.Errorf("the bundled catalog: %w", err)
		}
	}
	// A folder there already is incomplete or changed (checked above):
	// moved aside, then removed, so the rename below can take its place.
	if _, err := os.Lstat(final); err == nil {
		old := final + ".old-" + filepath.Base(tmp)
		if err := os.Rename(final, old); err != nil {
			return "", fmt.Errorf("the bundled catalog: %w", err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another command wrote the same catalog first.
		if bundledIntact(dir, list) {
			return dir, nil
		}
		return "", fmt.Errorf("the bundled catalog: %w", err)
	}
	return dir, nil
}

// bundledIntact reports whether dir holds every file of the catalog: the
// small ones byte for byte, the modules at their size (admission checks
// their sha256 against the manifests).
func bundledIntact(dir string, list []bundledFile) bool {
	for _, f := range list {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if path.Ext(f.name) == ".wasm" {
			st, err := os.Lstat(p)
			if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(f.data)) {
				return false
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.data) {
			return false
		}
	}
	return true
}
