// Package catalog loads a plugin directory into an immutable Snapshot: the
// plugins and tools its manifests describe, a search index over those tools,
// and the errors of the manifests that failed.
//
// By default building a snapshot reads manifests only: no byte of any
// .wasm module is read, and a module is opened, hashed and checked against
// its manifest when a tool of its plugin is needed (Plugin.ReadModule).
// With Options.RequireModules (what every toolshed command and hot reload
// use) a plugin is admitted only once its module is there, matches and
// passes Options.CheckModule.
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

	// Pending is set while the module file no longer matches the pin of
	// the admitted version (an update half written: the .wasm replaced
	// before its manifest): it says what differs. Calls run the admitted
	// module, kept (Options.KeepModules), meanwhile.
	Pending string

	fsys     fs.FS       // where the module is read from
	name     string      // module path inside fsys
	kept     string      // the admitted module's kept copy, or ""
	keptCode []byte      // the admitted module, when no copy could be written
	stamp    moduleStamp // the module file when admitted (keep.go)
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

	byName   map[string]*Tool   // folded name → tool
	tools    names.Set[*Tool]   // every tool name, for clashes
	reserved names.Set[*Tool]   // Options.Reserved
	decoded  map[string]decoded // manifest file → what it decoded to
	search   *search.Config     // the index's configuration
}

// Options adjust Load. The zero value is the default.
type Options struct {
	// Generation is stored in the snapshot; hot reload counts it up.
	Generation uint64
	// Search configures the index; nil is the default.
	Search *search.Config
	// RequireModules admits a plugin only when its module is there and
	// matches the manifest's sha256 (hot reload: a unit being copied is
	// not complete yet), and passes CheckModule. This reads the modules;
	// plain loads do not.
	RequireModules bool
	// CheckModule, with RequireModules, also judges the module's bytes
	// (wasm.CheckModule: its ABI exports and imports); a module it refuses
	// keeps its plugin out. Nil accepts any bytes.
	CheckModule func(code []byte) error
	// KeepModules, with RequireModules, is a folder where the bytes of
	// every admitted module are kept, named by their sha256: ReadModule
	// reads them there, so the version a snapshot lists is what its calls
	// run, whatever happens to the .wasm file (keep.go). "" keeps them in
	// memory (each admitted version's bytes, for as long as a snapshot
	// holds it). Without RequireModules nothing is kept: ReadModule reads
	// the module file.
	KeepModules string
	// Verified, with RequireModules, remembers the modules that passed,
	// so that a later load (by another process) of an unchanged module
	// need not read and hash it again. Nil: every module is read.
	Verified VerifiedModules
	// Previous is the snapshot being replaced (of the same directory): a
	// manifest that now fails (or whose unit is incomplete) keeps its
	// previous version live; a file keeps the plugin name it held; a
	// manifest whose bytes are unchanged is not decoded again.
	Previous *Snapshot
	// Reserved are tool names no plugin may use, nor any name that clashes
	// with one (names.Clash): the embedder's own always-on tools. The host's
	// built-in tools and tool_search are always reserved (manifest rule).
	Reserved []string
}

// GrantsFile is the name of a plugin directory's own grants: the grants
// file (host/wasm.GrantsFile) the command line applies to the folder's
// plugins when the operator gives none. It is not a manifest.
const GrantsFile = "_grants.json"

// checkModule applies CheckModule, if set.
func (o *Options) checkModule(code []byte) error {
	if o.CheckModule == nil {
		return nil
	}
	return o.CheckModule(code)
}

// VerifiedModules remembers modules that passed RequireModules' checks
// (present, matching the manifest's sha256, accepted by CheckModule).
// Known must report true only when the module's file is, beyond doubt,
// the one Remember was told about with that sha256 (the same file,
// unchanged since); a false negative only costs a read. Compiling a module
// reads and hashes it again whatever Known said.
type VerifiedModules interface {
	Known(p *Plugin) bool
	Remember(p *Plugin)
}

// IsManifestName reports whether a file name in a plugin directory is a
// manifest: NAME.json, not hidden, not an editor's temporary file and not
// the folder's GrantsFile.
func IsManifestName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") || name == GrantsFile {
		return false
	}
	return strings.HasSuffix(name, ".json") && len(name) > len(".json")
}

// MaxCatalogBytes bounds the bytes of all manifests one load reads: what
// reading, decoding and indexing a plugin directory can cost is bounded
// whatever the number of files in it (docs/MANIFEST.md gives the measured
// cost). Manifests of plugins loaded before are counted first.
const MaxCatalogBytes = 8 << 20

// MaxModuleBytes bounds the size of a module ReadModule reads.
const MaxModuleBytes = 128 << 20

// Load builds a snapshot from the manifests (*.json) at the top of dir.
// It fails only when dir itself cannot be read; a bad manifest becomes a
// LoadError in the snapshot and the others load.
//
// Only regular files are read, and reading never blocks: each manifest
// (and later each module) is opened inside dir through an os.Root (no name
// or symbolic link leads out of dir) with O_NONBLOCK, and its type is
// checked on the open descriptor. A named pipe, socket, device, directory,
// or a dangling, looping or escaping symbolic link named *.json is a
// LoadError for that file.
func Load(dir string, opts *Options) (*Snapshot, error) {
	return LoadFS(dirFS(dir), dir, opts)
}

// dirFS is the plugin directory as Load reads it: Open opens only regular
// files, without blocking, confined to the directory.
type dirFS string

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	root, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := manifest.OpenRegularIn(root, filepath.FromSlash(name))
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.ReadDir(filepath.Join(string(d), filepath.FromSlash(name)))
}

// openRegular opens name in fsys if it is a regular file. A file system
// other than Load's gives no non-blocking open, so the file's type is
// checked before opening it (fs.Stat) and again on the open file.
func openRegular(fsys fs.FS, name string) (fs.File, error) {
	notRegular := func(mode fs.FileMode) error {
		return &fs.PathError{Op: "open", Path: name, Err: &manifest.NotRegularError{Mode: mode.Type()}}
	}
	if _, ok := fsys.(dirFS); !ok {
		st, err := fs.Stat(fsys, name)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, notRegular(st.Mode())
		}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// decoded is what one manifest file decoded to, kept in the snapshot so the
// next load need not decode the same bytes again.
type decoded struct {
	sum [sha256.Size]byte
	m   *manifest.Manifest
	err error
}

// candidate is a manifest file in the order names are given out.
type candidate struct {
	file string
	d    decoded
	old  *Plugin // the plugin this file held in the previous snapshot
	rank int     // 0: holds its name; 1: file named NAME.json; 2: other
}

// LoadFS is Load over any file system; dir names it in paths and errors.
//
// Names are given out in this order, which decides who wins a clash of
// plugin names or tool names: first the files that held their plugin name
// in opts.Previous (and still declare it, or fail and keep their previous
// version live), then files named exactly NAME.json for the NAME they
// declare, then the others; in file-name order within each group. A
// manifest that clashes with one admitted before it is refused as a whole,
// evicts nothing, and its error names the holder.
func LoadFS(fsys fs.FS, dir string, opts *Options) (*Snapshot, error) {
	if opts == nil {
		opts = &Options{}
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("catalog: read plugin directory %s: %w", dir, err)
	}
	s := &Snapshot{Generation: opts.Generation, Dir: dir, byName: map[string]*Tool{},
		decoded: map[string]decoded{}, search: opts.Search}
	for _, r := range opts.Reserved {
		s.reserved.Add(r, nil)
	}
	pluginFile := map[string]string{}
	previous := map[string]*Plugin{}
	var prevDecoded map[string]decoded
	if opts.Previous != nil {
		for _, p := range opts.Previous.Plugins {
			previous[p.ManifestPath] = p
		}
		prevDecoded = opts.Previous.decoded
	}
	add := func(p *Plugin) {
		pluginFile[p.Name()] = p.ManifestPath
		p.Tools = p.Tools[:0]
		for _, spec := range p.Manifest.Tools {
			t := &Tool{Plugin: p, Spec: spec}
			p.Tools = append(p.Tools, t)
			s.byName[names.Fold(spec.Name)] = t
			s.tools.Add(spec.Name, t)
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
	// Files that held a plugin are read first, so a flood of new files
	// cannot take their share of MaxCatalogBytes.
	var files []fs.DirEntry
	for _, e := range entries { // ReadDir sorts by name
		if IsManifestName(e.Name()) {
			files = append(files, e)
		}
	}
	sort.SliceStable(files, func(i, j int) bool {
		return previous[filepath.Join(dir, files[i].Name())] != nil && previous[filepath.Join(dir, files[j].Name())] == nil
	})
	var cands []candidate
	budget := int64(MaxCatalogBytes)
	for _, e := range files {
		file := filepath.Join(dir, e.Name())
		d, err := readManifest(fsys, e.Name(), file, prevDecoded[file], &budget)
		if err != nil { // not read: nothing to decode, nothing to keep
			fail(file, err)
			continue
		}
		s.decoded[file] = d
		c := candidate{file: file, d: d, old: previous[file], rank: 2}
		switch {
		case c.old != nil && (d.m == nil || d.m.Name == c.old.Name()):
			c.rank = 0
		case d.m != nil && e.Name() == d.m.Name+".json":
			c.rank = 1
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].rank < cands[j].rank })
	for _, c := range cands {
		if c.d.err != nil {
			fail(c.file, c.d.err)
			continue
		}
		m := c.d.m
		if err := s.checkClashes(m, c.file, pluginFile); err != nil {
			fail(c.file, err)
			continue
		}
		p := &Plugin{
			Manifest:     m,
			ManifestPath: c.file,
			ModulePath:   filepath.Join(dir, filepath.FromSlash(m.Wasm)),
			fsys:         fsys,
			name:         m.Wasm,
		}
		if opts.RequireModules {
			if old := c.old; old != nil && old.Manifest.SHA256 == m.SHA256 && old.Manifest.Version == m.Version {
				// Unchanged pin: the module was checked when it was
				// admitted, and its kept copy serves; a module file that
				// changed since is reported.
				p.keepFrom(old)
				if p.kept != "" || p.keptCode != nil {
					p.checkPending()
				}
			} else if opts.Verified != nil && opts.Verified.Known(p) && p.keptInDir(opts.KeepModules) {
				// The same file passed before, in an earlier load.
				p.stamp, _ = stampOf(p.fsys, path.Clean(p.name))
			} else if code, err := p.readOriginal(); err != nil {
				fail(c.file, fmt.Errorf("%w; the plugin is left out until its module is there and matches", err))
				continue
			} else if err := opts.checkModule(code); err != nil {
				fail(c.file, fmt.Errorf("plugin %q: module %s: %w", m.Name, p.ModulePath, err))
				continue
			} else {
				p.stamp, _ = stampOf(p.fsys, path.Clean(p.name))
				p.keep(opts.KeepModules, code)
				if opts.Verified != nil {
					opts.Verified.Remember(p)
				}
			}
		}
		add(p)
	}
	sort.Slice(s.Plugins, func(i, j int) bool { return s.Plugins[i].Name() < s.Plugins[j].Name() })
	sort.Slice(s.Tools, func(i, j int) bool { return s.Tools[i].Name() < s.Tools[j].Name() })
	sort.Slice(s.Errors, func(i, j int) bool { return s.Errors[i].File < s.Errors[j].File })
	if prev := opts.Previous; prev != nil && prev.search == s.search && samePlugins(prev.Plugins, s.Plugins) {
		s.Index = prev.Index // the same manifests: the same index
		return s, nil
	}
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

// samePlugins reports whether two sorted plugin lists hold the same
// manifests (the same decoded values, so the same bytes).
func samePlugins(a, b []*Plugin) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Manifest != b[i].Manifest {
			return false
		}
	}
	return true
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

// readManifest reads a manifest file and decodes it, unless its bytes are
// those prev was decoded from. The error is for a file that could not be
// read; a manifest that does not decode is a decoded with err set.
//
// budget is what remains of MaxCatalogBytes; the file's size is taken from
// it, and a file larger than what remains is not read.
func readManifest(fsys fs.FS, name, file string, prev decoded, budget *int64) (decoded, error) {
	notRead := func(reason string) (decoded, error) {
		return decoded{}, manifest.Errors{{File: file, Reason: "not read: " + reason}}
	}
	f, err := openRegular(fsys, name)
	if err != nil {
		return notRead(pathErrReason(err))
	}
	defer f.Close()
	overBudget := func(size int64) (decoded, error) {
		return notRead(fmt.Sprintf("the manifests read before it total %d bytes; with its %d bytes they would pass %d, the most one catalog reads",
			MaxCatalogBytes-*budget, size, MaxCatalogBytes))
	}
	if st, err := f.Stat(); err == nil && st.Size() > *budget && st.Size() <= manifest.MaxFileBytes {
		return overBudget(st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, min(manifest.MaxFileBytes+1, max(*budget, 0)+1)))
	if err != nil {
		return notRead(pathErrReason(err))
	}
	if int64(len(data)) > *budget && len(data) <= manifest.MaxFileBytes {
		return overBudget(int64(len(data)))
	}
	*budget -= int64(len(data))
	d := decoded{sum: sha256.Sum256(data)}
	if d.sum == prev.sum && (prev.m != nil || prev.err != nil) {
		return prev, nil
	}
	d.m, d.err = manifest.Decode(data)
	var es manifest.Errors
	if errors.As(d.err, &es) {
		for _, e := range es {
			e.File = file
		}
	}
	return d, nil
}

// pathErrReason drops the path an *fs.PathError repeats.
func pathErrReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// checkClashes rejects a manifest whose plugin name or tool names are
// taken by a manifest admitted before it (LoadFS gives the order), or whose
// tool names clash with a name the embedder reserved.
func (s *Snapshot) checkClashes(m *manifest.Manifest, file string, pluginFile map[string]string) error {
	var es manifest.Errors
	if other, ok := pluginFile[m.Name]; ok {
		es = append(es, &manifest.FieldError{File: file, Field: "name", Reason: fmt.Sprintf(
			"plugin %q is already loaded from %s; this manifest is refused (a plugin name stays with the file that held it, else goes to %s.json, else to the first file by name)",
			m.Name, other, m.Name)})
	}
	for i, t := range m.Tools {
		field := fmt.Sprintf("tools[%d].name", i)
		if other, _, ok := s.reserved.Find(t.Name); ok {
			es = append(es, &manifest.FieldError{File: file, Field: field,
				Reason: fmt.Sprintf("tool %q clashes with %q, a tool this host reserves", t.Name, other)})
		} else if other, tl, ok := s.tools.Find(t.Name); ok {
			es = append(es, &manifest.FieldError{File: file, Field: field,
				Reason: fmt.Sprintf("tool %q clashes with tool %q of plugin %q (%s); names must differ in more than case, _ - and look-alike characters (I/l/1, O/0, rn/m, vv/w, cl/d)",
					t.Name, other, tl.Plugin.Name(), tl.Plugin.ManifestPath)})
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

// ReadModule returns the plugin's module, checked against the manifest's
// sha256: the copy kept at admission (Options.KeepModules), else the .wasm
// file.
func (p *Plugin) ReadModule() ([]byte, error) {
	if p.kept != "" || p.keptCode != nil {
		if data, err := p.readKept(); err == nil {
			return data, nil
		}
		// The kept copy is gone or changed: the module file, if it
		// still matches.
	}
	return p.readOriginal()
}

// readOriginal reads the .wasm file the manifest names and checks it
// against the manifest's sha256.
func (p *Plugin) readOriginal() ([]byte, error) {
	f, err := openRegular(p.fsys, path.Clean(p.name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("plugin %q: module %s is missing (named by %s)", p.Name(), p.ModulePath, p.ManifestPath)
		}
		return nil, fmt.Errorf("plugin %q: module %s: %s", p.Name(), p.ModulePath, pathErrReason(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxModuleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("plugin %q: module %s: %w", p.Name(), p.ModulePath, err)
	}
	if len(data) > MaxModuleBytes {
		return nil, fmt.Errorf("plugin %q: module %s is larger than %d bytes", p.Name(), p.ModulePath, MaxModuleBytes)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != p.Manifest.SHA256 {
		return nil, fmt.Errorf("plugin %q: module %s has sha256 %s, the manifest pins %s", p.Name(), p.ModulePath, got, p.Manifest.SHA256)
	}
	return data, nil
}
