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
	// MaxBytes bounds the artifacts kept, all directories together, at
	// every Put: a write that would pass it first removes its own
	// tenant's oldest files (PutFor), else the oldest of the tenant that
	// holds the most, and fails if it cannot fit. Default 512 MiB.
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
	led  ledger              // every file the directories hold, and whose (ledger.go)
	// shared: copies where every replica finds them (Share, shared.go).
	shared *shared
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
		if s.led.loaded { // its files from before are earlier's
			for _, f := range s.scan() {
				if _, ok := s.led.files[f.path]; !ok && filepath.Dir(f.path) == dir {
					s.led.add(f.path, ledgerFile{id: f.id, owner: earlier, size: f.size, mod: f.mod})
				}
			}
		}
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
	".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
}

// extOf is the extension a content type is stored under.
var extOf = map[string]string{
	"image/svg+xml": ".svg", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"application/pdf": ".pdf", "text/csv": ".csv", "application/json": ".json", "text/plain": ".txt",
	"text/markdown": ".md", "text/html": ".html", "audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg",
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

// Put stores data in dir under a new id, for no tenant.
func (s *Store) Put(dir, name, contentType string, data []byte) (Artifact, error) {
	return s.PutFor("", dir, name, contentType, data)
}

// PutFor stores data in dir under a new id for tenant (an opaque id;
// toolshed serve's is a hash of the API key). If the store would pass
// MaxBytes, tenant's own oldest files are removed first to make room,
// then the oldest of whoever holds the most; a write that cannot fit
// fails with ErrFull.
func (s *Store) PutFor(tenant, dir, name, contentType string, data []byte) (Artifact, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	base := safeName(name, contentType)
	id := hex.EncodeToString(b) + "-" + base
	full := filepath.Join(dir, id)
	s.mu.Lock()
	s.load()
	s.addDir(dir)
	err := s.makeRoom(tenant, full, id, int64(len(data)))
	s.mu.Unlock()
	if err != nil {
		return Artifact{}, err
	}
	forget := func() {
		s.mu.Lock()
		s.led.remove(full)
		s.mu.Unlock()
	}
	defer func() {
		s.mu.Lock()
		if f, ok := s.led.files[full]; ok {
			f.pending = false
			s.led.files[full] = f
		}
		s.mu.Unlock()
	}()
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		forget()
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(full)
		forget()
		return Artifact{}, fmt.Errorf("artifact: could not write it: %w", werr)
	}
	a := Artifact{ID: id, Name: base, ContentType: typeOf(base), Size: int64(len(data)), Created: time.Now(), Path: full}
	s.mu.Lock()
	s.byID[id] = a
	s.mu.Unlock()
	s.putShared(a, data)
	return a, nil
}

// ErrNotFound is the error of Get for an id that names no artifact (never
// stored, removed, or not an id).
var ErrNotFound = errors.New("artifact not found")

// Get returns the artifact of id: one stored by this process, found in
// the store's directories, or (Share) kept by another replica.
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
	return s.getShared(id) // made by another replica (Share)
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
// than MaxAge, then (when files came from elsewhere: Put keeps MaxBytes)
// the oldest until the rest fit in MaxBytes. Only files named as
// artifacts are touched. It reports how many it removed.
func (s *Store) Sweep() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.load()
	var errs []error
	for _, d := range s.dirs {
		if _, err := os.Stat(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The ledger follows the disk: files that appeared are earlier's,
	// files that went are forgotten (not a write in progress), times and
	// sizes are the files'.
	onDisk := map[string]bool{}
	for _, f := range s.scan() {
		onDisk[f.path] = true
		owner := earlier
		if lf, ok := s.led.files[f.path]; ok {
			owner = lf.owner
		}
		s.led.add(f.path, ledgerFile{id: f.id, owner: owner, size: f.size, mod: f.mod})
	}
	type file struct {
		path string
		ledgerFile
	}
	var files []file
	for p, f := range s.led.files {
		if onDisk[p] {
			files = append(files, file{p, f})
		} else if !f.pending {
			s.led.remove(p)
			delete(s.byID, f.id)
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
		s.led.remove(f.path)
		delete(s.byID, f.id)
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
