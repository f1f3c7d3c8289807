package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Record is what a pull leaves beside a plugin, in the hidden file
// .NAME.oci.json (the catalog reads only NAME.json files): where the
// plugin came from and what it is, so a host can report the digest it
// runs and a syncer can tell its own files from an operator's.
type Record struct {
	Reference      string `json:"reference"`
	Digest         string `json:"digest"`          // the OCI manifest's
	Version        string `json:"version"`         // the plugin's
	ManifestSHA256 string `json:"manifest_sha256"` // of NAME.json
	ModuleSHA256   string `json:"module_sha256"`   // of NAME.wasm
}

// RecordFile is the record's file name for a plugin.
func RecordFile(name string) string { return "." + name + ".oci.json" }

// ReadRecord reads a plugin's record from dir; (nil, nil) when there is
// none.
func ReadRecord(dir, name string) (*Record, error) {
	data, err := readRegular(filepath.Join(dir, RecordFile(name)), 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", RecordFile(name), err)
	}
	return &r, nil
}

// ErrNotOwned is returned by WriteDir when NAME.json or NAME.wasm exists
// in the folder without a record: the operator's own files are never
// overwritten by a pull.
var ErrNotOwned = errors.New("exists and was not pulled from a registry; not overwritten")

// WriteDir writes a verified plugin into dir as NAME.json and NAME.wasm,
// with its record, so that a reader of the folder (hot reload) only ever
// sees whole plugins: each file is written to a hidden temporary file in
// dir, synced, then renamed over its name. The manifest is renamed first:
// until the module follows, the new manifest's sha256 pin does not match
// the module on disk, and hot reload keeps the previous version. When
// force is false, files of the plugin's names that have no record are
// refused (ErrNotOwned).
func WriteDir(dir string, p *Plugin, ref string, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !force {
		rec, err := ReadRecord(dir, p.Name)
		if err != nil {
			return err
		}
		if rec == nil {
			for _, f := range []string{p.ManifestFile(), p.ModuleFile()} {
				if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), ErrNotOwned)
				}
			}
		}
	}
	rec, _ := json.MarshalIndent(Record{Reference: ref, Digest: p.Digest, Version: p.Version,
		ManifestSHA256: p.ManifestSHA256(), ModuleSHA256: p.ModuleSHA256()}, "", "  ")
	files := []struct {
		name string
		data []byte
	}{
		{p.ManifestFile(), p.Manifest},
		{p.ModuleFile(), p.Module},
		{RecordFile(p.Name), append(rec, '\n')},
	}
	for _, f := range files {
		if err := writeAtomic(dir, f.name, f.data); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// writeAtomic writes data to dir/name through a hidden temporary file and
// a rename.
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	ok = true
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	d.Sync() // not every file system syncs directories; the renames stand either way
	return nil
}
