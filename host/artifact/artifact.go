// Package artifact keeps the files tools produce (charts, reports) so that
// they reach the user: each under an unguessable id, with its content
// type, in one or more directories, removed by age and by total size.
//
// The plugin runtime stores a granted plugin's files through a Store
// (wasm.Options.Artifacts); the front ends send them to clients: MCP as
// image or embedded-resource content and as resources to read by URI,
// the OpenAI endpoint as /v1/artifacts/ID URLs (host/openaiapi).
package artifact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Artifact is one stored file.
type Artifact struct {
	// ID names it in URLs and URIs: 32 hex digits, then "-" and Name.
	ID          string
	Name        string // the file name the tool gave, made safe
	ContentType string
	Size        int64
	Created     time.Time
	Path        string // where it is on the server's disk
}

// URI is the artifact's MCP resource URI.
func (a Artifact) URI() string { return URIPrefix + a.ID }

// URIPrefix begins every artifact's MCP resource URI.
const URIPrefix = "toolshed://artifacts/"

// Options configure a Store; zero values are the defaults.
type Options struct {
	// MaxAge removes artifacts older than this at each Sweep. Default 24
	// hours.
	MaxAge time.Duration
	// MaxBytes bounds the artifacts kept, all directories together; a
	// Sweep removes the oldest until they fit. Default 512 MiB.
	MaxBytes int64
	// Dirs are directories to serve and sweep from the start (artifacts
	// stored before a restart); Put adds the ones it writes to.
	Dirs []string
}

// Store keeps artifacts. It is safe for concurrent use.
type Store struct {
	opts Options

	mu   sync.Mutex
	dirs []string            // sorted
	byID map[string]Artifact // stored by this process or found on disk
}

// New returns a store; nothing is read from disk until needed.
func New(opts Options) *Store {
	if opts.MaxAge <= 0 {
		opts.MaxAge = 24 * time.Hour
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 512 << 20
	}
	s := &Store{opts: opts, byID: map[string]Artifact{}}
	for _, d := range opts.Dirs {
		s.addDir(d)
	}
	return s
}

func (s *Store) addDir(dir string) {
	dir = filepath.Clean(dir)
	if i, found := slices.BinarySearch(s.dirs, dir); !found {
		s.dirs = slices.Insert(s.dirs, i, dir)
	}
}

var (
	unsafeName = regexp.MustCompile(`[^\p{L}\p{N}._-]+`)
	idRE       = regexp.MustCompile(`^[0-9a-f]{32}-[\p{L}\p{N}._-]{1,100}$`)
)

// types are the content types an artifact may be served as, by file
// extension; any other is application/octet-stream.
var types = map[string]string{
	".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".pdf": "application/pdf", ".csv": "text/csv",
	".json": "application/json", ".txt": "text/plain", ".md": "text/markdown", ".html": "text/html",
}

// extOf is the extension a content type is stored under.
var extOf = map[string]string{
	"image/svg+xml": ".svg", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"application/pdf": ".pdf", "text/csv": ".csv", "application/json": ".json", "text/plain": ".txt",
	"text/markdown": ".md", "text/html": ".html",
}

// typeOf is the content type of a stored name.
func typeOf(name string) string {
	if t, ok := types[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// safeName makes a tool's file name safe to store and to show; the
// content type the tool gave decides the extension when the name's does
// not match it.
func safeName(name, contentType string) string {
	base := strings.Trim(unsafeName.ReplaceAllString(path.Base("/"+name), "-"), "-.")
	if base == "" {
		base = "artifact"
	}
	ct, _, _ := mime.ParseMediaType(contentType)
	if ext, ok := extOf[ct]; ok && typeOf(base) != ct {
		base += ext
	}
	if len(base) > 100 {
		base = base[len(base)-100:]
		base = strings.TrimLeft(base, "-.")
	}
	return base
}

// Put stores data in dir under a new id.
func (s *Store) Put(dir, name, contentType string, data []byte) (Artifact, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	base := safeName(name, contentType)
	id := hex.EncodeToString(b) + "-" + base
	full := filepath.Join(dir, id)
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(full)
		return Artifact{}, fmt.Errorf("artifact: could not write it: %w", werr)
	}
	a := Artifact{ID: id, Name: base, ContentType: typeOf(base), Size: int64(len(data)), Created: time.Now(), Path: full}
	s.mu.Lock()
	s.addDir(dir)
	s.byID[id] = a
	s.mu.Unlock()
	return a, nil
}

// ErrNotFound is the error of Get for an id that names no artifact (never
// stored, removed, or not an id).
var ErrNotFound = errors.New("artifact not found")

// Get returns the artifact of id: one stored by this process, or found in
// the store's directories.
func (s *Store) Get(id string) (Artifact, error) {
	if !idRE.MatchString(id) {
		return Artifact{}, ErrNotFound
	}
	s.mu.Lock()
	a, ok := s.byID[id]
	dirs := s.dirs
	s.mu.Unlock()
	if ok {
		if st, err := os.Stat(a.Path); err == nil && st.Mode().IsRegular() && time.Since(st.ModTime()) <= s.opts.MaxAge {
			return a, nil
		}
		s.mu.Lock()
		delete(s.byID, id)
		s.mu.Unlock()
		return Artifact{}, ErrNotFound
	}
	for _, d := range dirs {
		full := filepath.Join(d, id)
		st, err := os.Lstat(full)
		if err != nil || !st.Mode().IsRegular() || time.Since(st.ModTime()) > s.opts.MaxAge {
			continue
		}
		name := id[33:]
		return Artifact{ID: id, Name: name, ContentType: typeOf(name), Size: st.Size(), Created: st.ModTime(), Path: full}, nil
	}
	return Artifact{}, ErrNotFound
}

// Read returns the artifact of id and its bytes.
func (s *Store) Read(id string) (Artifact, []byte, error) {
	a, err := s.Get(id)
	if err != nil {
		return Artifact{}, nil, err
	}
	data, err := os.ReadFile(a.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Artifact{}, nil, ErrNotFound
	}
	return a, data, err
}

// Sweep removes, in every directory of the store, the artifacts older
// than MaxAge, then the oldest until the rest fit in MaxBytes. Only files
// named as artifacts are touched. It reports how many it removed.
func (s *Store) Sweep() (int, error) {
	s.mu.Lock()
	dirs := slices.Clone(s.dirs)
	s.mu.Unlock()
	type file struct {
		path, id string
		size     int64
		mod      time.Time
	}
	var files []file
	var errs []error
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !idRE.MatchString(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			files = append(files, file{filepath.Join(d, e.Name()), e.Name(), info.Size(), info.ModTime()})
		}
	}
	// Newest first; ties by path, so the same files give the same choice.
	slices.SortFunc(files, func(a, b file) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	removed := 0
	var kept int64
	full := false // once one does not fit, every older one goes
	now := time.Now()
	for _, f := range files {
		if !full && now.Sub(f.mod) <= s.opts.MaxAge && kept+f.size <= s.opts.MaxBytes {
			kept += f.size
			continue
		}
		full = full || now.Sub(f.mod) <= s.opts.MaxAge
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
		s.mu.Lock()
		delete(s.byID, f.id)
		s.mu.Unlock()
	}
	return removed, errors.Join(errs...)
}

// Run sweeps now and then every interval until ctx ends, logging what it
// could not remove through report (nil: ignored).
func (s *Store) Run(ctx context.Context, every time.Duration, report func(removed int, err error)) {
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := s.Sweep()
		if report != nil && (n > 0 || err != nil) {
			report(n, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
