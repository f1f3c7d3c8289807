// Package catalog loads a plugin directory into an immutable Snapshot: the
// plugins and tools its manifests describe, a search index over those tools,
// and the errors of the manifests that failed.
//
// Building a snapshot reads manifests only: no byte of any .wasm module is
// read. A module is opened, hashed and checked against its manifest only
// when a tool of its plugin is needed (Plugin.ReadModule).
//
// A Snapshot is immutable once Load returns and safe for concurrent use by
// any number of goroutines; callers must treat its fields (and the plugins
// and tools they reach) as read-only. Hot reload builds a new Snapshot beside the old
// one; the two share nothing mutable.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/names"
	"github.com/toolshed/toolshed/search"
)

// Plugin is one loaded plugin.
type Plugin struct {
	Manifest     *manifest.Manifest
	ManifestPath string // as given to Load, joined with the file name
	ModulePath   string // the .wasm file the manifest names
	Tools        []*Tool

	fsys fs.FS  // where the module is read from
	name string // module path inside fsys
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.Manifest.Name }

// Tool is one deferred tool.
type Tool struct {
	Plugin *Plugin
	Spec   manifest.Tool
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.Spec.Name }

// LoadError is a manifest that failed: the file and every problem found.
type LoadError struct {
	File string
	Err  error
}

func (e LoadError) Error() string { return e.Err.Error() }

// Snapshot is the catalog at one moment.
type Snapshot struct {
	Generation uint64
	Dir        string
	Plugins    []*Plugin   // sorted by name
	Tools      []*Tool     // sorted by name
	Errors     []LoadError // sorted by file
	Index      *search.Index

	byName map[string]*Tool // folded name → tool
}

// Options adjust Load. The zero value is the default.
type Options struct {
	// Generation is stored in the snapshot; hot reload counts it up.
	Generation uint64
	// Search configures the index; nil is the default.
	Search *search.Config
	// RequireModules admits a plugin only when its module is there and
	// matches the manifest's sha256 (hot reload: a unit being copied is
	// not complete yet). This reads the modules; plain loads do not.
	RequireModules bool
	// Previous is the snapshot being replaced: a manifest that now fails
	// (or whose unit is incomplete) keeps its previous version live.
	Previous *Snapshot
}

// IsManifestName reports whether a file name in a plugin directory is a
// manifest: NAME.json, not hidden and not an editor's temporary file.
func IsManifestName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") {
		return false
	}
	return strings.HasSuffix(name, ".json") && len(name) > len(".json")
}

// Load builds a snapshot from the manifests (*.json) at the top of dir.
// It fails only when dir itself cannot be read; a bad manifest becomes a
// LoadError in the snapshot and the others load.
func Load(dir string, opts *Options) (*Snapshot, error) {
	return LoadFS(os.DirFS(dir), dir, opts)
}

// LoadFS is Load over any file system; dir names it in paths and errors.
func LoadFS(fsys fs.FS, dir string, opts *Options) (*Snapshot, error) {
	if opts == nil {
		opts = &Options{}
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("catalog: read plugin directory %s: %w", dir, err)
	}
	s := &Snapshot{Generation: opts.Generation, Dir: dir, byName: map[string]*Tool{}}
	pluginFile := map[string]string{}
	previous := map[string]*Plugin{}
	if opts.Previous != nil {
		for _, p := range opts.Previous.Plugins {
			previous[p.ManifestPath] = p
		}
	}
	add := func(p *Plugin) {
		pluginFile[p.Name()] = p.ManifestPath
		p.Tools = p.Tools[:0]
		for _, spec := range p.Manifest.Tools {
			t := &Tool{Plugin: p, Spec: spec}
			p.Tools = append(p.Tools, t)
			s.byName[names.Fold(spec.Name)] = t
			s.Tools = append(s.Tools, t)
		}
		s.Plugins = append(s.Plugins, p)
	}
	// fail records a manifest's error and keeps its previous version live.
	fail := func(file string, err error) {
		if old, ok := previous[file]; ok && s.checkClashes(old.Manifest, file, pluginFile) == nil {
			err = fmt.Errorf("%w\n(version %s stays live)", err, old.Manifest.Version)
			add(old.clone())
		}
		s.Errors = append(s.Errors, LoadError{File: file, Err: err})
	}
	for _, e := range entries { // ReadDir sorts by name: load order is stable
		if e.IsDir() || !IsManifestName(e.Name()) {
			continue
		}
		file := filepath.Join(dir, e.Name())
		m, err := readManifest(fsys, e.Name(), file)
		if err != nil {
			fail(file, err)
			continue
		}
		if err := s.checkClashes(m, file, pluginFile); err != nil {
			fail(file, err)
			continue
		}
		p := &Plugin{
			Manifest:     m,
			ManifestPath: file,
			ModulePath:   filepath.Join(dir, filepath.FromSlash(m.Wasm)),
			fsys:         fsys,
			name:         m.Wasm,
		}
		if opts.RequireModules {
			if old, ok := previous[file]; ok && old.Manifest.SHA256 == m.SHA256 && old.Manifest.Version == m.Version {
				// Unchanged pin: the module was checked when it was admitted.
			} else if _, err := p.ReadModule(); err != nil {
				fail(file, fmt.Errorf("unit not complete yet: %w", err))
				continue
			}
		}
		add(p)
	}
	sort.Slice(s.Plugins, func(i, j int) bool { return s.Plugins[i].Name() < s.Plugins[j].Name() })
	sort.Slice(s.Tools, func(i, j int) bool { return s.Tools[i].Name() < s.Tools[j].Name() })
	docs := make([]search.Document, len(s.Tools))
	for i, t := range s.Tools {
		docs[i] = Document(t.Spec, t.Plugin.Name())
	}
	s.Index, err = search.Build(docs, opts.Search)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return s, nil
}

// Document turns a manifest tool into what the search index reads.
func Document(t manifest.Tool, plugin string) search.Document {
	d := search.Document{
		Name:        t.Name,
		Plugin:      plugin,
		Description: t.Description,
		Keywords:    t.Keywords,
		Examples:    t.Examples,
	}
	d.Params = SchemaParams(t.Parameters)
	return d
}

func readManifest(fsys fs.FS, name, file string) (*manifest.Manifest, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, manifest.Errors{{File: file, Reason: err.Error()}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, manifest.MaxFileBytes+1))
	if err != nil {
		return nil, manifest.Errors{{File: file, Reason: err.Error()}}
	}
	m, err := manifest.Decode(data)
	if err != nil {
		var es manifest.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.File = file
			}
		}
		return nil, err
	}
	return m, nil
}

// checkClashes rejects a manifest whose plugin or tool names are taken by a
// manifest loaded before it (in file-name order).
func (s *Snapshot) checkClashes(m *manifest.Manifest, file string, pluginFile map[string]string) error {
	var es manifest.Errors
	if other, ok := pluginFile[m.Name]; ok {
		es = append(es, &manifest.FieldError{File: file, Field: "name", Reason: fmt.Sprintf("plugin %q is already loaded from %s", m.Name, other)})
	}
	for i, t := range m.Tools {
		if other, ok := s.byName[names.Fold(t.Name)]; ok {
			es = append(es, &manifest.FieldError{File: file, Field: fmt.Sprintf("tools[%d].name", i),
				Reason: fmt.Sprintf("tool %q clashes with tool %q of plugin %q (%s)", t.Name, other.Name(), other.Plugin.Name(), other.Plugin.ManifestPath)})
		}
	}
	if len(es) > 0 {
		return es
	}
	return nil
}

// Tool returns the tool with the given name (compared as manifest.FoldName does).
func (s *Snapshot) Tool(name string) (*Tool, bool) {
	t, ok := s.byName[names.Fold(name)]
	return t, ok
}

// Search runs a keyword query over the snapshot's tools.
func (s *Snapshot) Search(query string, limit int) (search.Result, error) {
	return s.Index.Search(query, limit)
}

// clone returns a copy of the plugin without its tools (a new snapshot
// makes its own Tool values).
func (p *Plugin) clone() *Plugin {
	c := *p
	c.Tools = nil
	return &c
}

// ReadModule reads the plugin's .wasm module and checks it against the
// manifest's sha256. It is the first time any byte of the module is read.
func (p *Plugin) ReadModule() ([]byte, error) {
	f, err := p.fsys.Open(path.Clean(p.name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("plugin %q: module %s is missing (named by %s)", p.Name(), p.ModulePath, p.ManifestPath)
		}
		return nil, fmt.Errorf("plugin %q: module %s: %w", p.Name(), p.ModulePath, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("plugin %q: module %s is not a regular file", p.Name(), p.ModulePath)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: module %s: %w", p.Name(), p.ModulePath, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != p.Manifest.SHA256 {
		return nil, fmt.Errorf("plugin %q: module %s has sha256 %s, the manifest pins %s", p.Name(), p.ModulePath, got, p.Manifest.SHA256)
	}
	return data, nil
}
