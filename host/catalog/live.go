package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Live is the catalog of a plugin directory that changes while the host
// runs: Snapshot returns the current snapshot; Reload (or Watch) builds a
// new one beside it and swaps it in atomically. Sessions keep the snapshot
// they started with, so an update never changes a running request.
//
// A plugin unit (manifest + module) is admitted only once it is complete
// and its module matches the manifest's sha256; a manifest that fails, or
// whose unit is incomplete, keeps its previous version live and its error
// is reported.
//
// A Live is safe for concurrent use.
type Live struct {
	dir    string
	search *Options
	log    *slog.Logger

	cur      atomic.Pointer[Snapshot]
	mu       sync.Mutex // serialises reloads
	gen      uint64
	lastErr  error
	reloads  atomic.Uint64
	onChange func(old, new *Snapshot)
}

// LiveOptions configure a Live. The zero value is usable.
type LiveOptions struct {
	// Search is passed to every load (index configuration).
	Search *Options
	// Logger receives reload results; nil discards.
	Logger *slog.Logger
	// OnChange is called after each swap with the old and new snapshots
	// (the runtime releases plugins no snapshot uses any more).
	OnChange func(old, new *Snapshot)
}

// NewLive loads dir and returns its live catalog.
func NewLive(dir string, opts LiveOptions) (*Live, error) {
	l := &Live{dir: dir, search: opts.Search, log: opts.Logger, onChange: opts.OnChange}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if _, err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// Snapshot returns the current snapshot.
func (l *Live) Snapshot() *Snapshot { return l.cur.Load() }

// Reloads counts the swaps so far.
func (l *Live) Reloads() uint64 { return l.reloads.Load() }

// LastError is the error of the last reload that could not read the
// directory (the previous snapshot stayed), or nil.
func (l *Live) LastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// Reload builds a new snapshot and swaps it in. If the directory cannot be
// read (it was deleted), the current snapshot stays and the error is
// returned.
func (l *Live) Reload() (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	opts := Options{}
	if l.search != nil {
		opts = *l.search
	}
	old := l.cur.Load()
	opts.Generation = l.gen + 1
	opts.Previous = old
	opts.RequireModules = true
	s, err := Load(l.dir, &opts)
	if err != nil {
		l.lastErr = err
		l.log.Warn("plugin directory unreadable; the catalog is unchanged", "dir", l.dir, "error", err)
		return old, err
	}
	l.gen, l.lastErr = s.Generation, nil
	l.cur.Store(s)
	l.reloads.Add(1)
	for _, e := range s.Errors {
		l.log.Warn("plugin not loaded", "file", e.File, "error", strings.ReplaceAll(e.Error(), "\n", "; "))
	}
	for _, p := range s.Plugins {
		if p.Pending != "" {
			l.log.Warn("plugin update half written", "plugin", p.Name(), "version", p.Manifest.Version, "pending", p.Pending)
		}
	}
	l.log.Info("catalog loaded", "generation", s.Generation, "plugins", len(s.Plugins), "tools", len(s.Tools), "errors", len(s.Errors))
	if l.onChange != nil && old != nil {
		l.onChange(old, s)
	}
	return s, nil
}

// WatchOptions configure Watch.
type WatchOptions struct {
	// Debounce waits for a burst of events to end (default 100ms).
	Debounce time.Duration
	// Poll rescans the directory this often, for file systems where
	// events do not arrive (default 2s; negative: never).
	Poll time.Duration
}

// Watch reloads on changes until ctx ends: file system events (fsnotify),
// debounced, with a polling fallback that also notices the directory being
// deleted and re-created. Editor and temporary files are ignored.
func (l *Live) Watch(ctx context.Context, opts WatchOptions) error {
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Poll == 0 {
		opts.Poll = 2 * time.Second
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("catalog: watch %s: %w", l.dir, err)
	}
	defer w.Close()
	watching := w.Add(l.dir) == nil
	var poll <-chan time.Time
	if opts.Poll > 0 {
		t := time.NewTicker(opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	last := l.fingerprint()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if relevant(ev.Name) || ev.Name == l.dir {
				debounce.Reset(opts.Debounce)
				pending = true
			}
		case err, ok := <-w.Errors:
			if ok {
				l.log.Warn("plugin directory watch error; polling continues", "error", err)
			}
		case <-poll:
			if !watching {
				watching = w.Add(l.dir) == nil // the directory came back
			}
			if p := l.fingerprint(); p != last && !pending {
				debounce.Reset(opts.Debounce)
				pending = true
			}
		case <-debounce.C:
			pending = false
			if _, err := l.Reload(); err != nil {
				watching = false // re-add the watch when the directory returns
				w.Remove(l.dir)
			}
			last = l.fingerprint()
		}
	}
}

// relevant reports whether a changed file can matter: a manifest or a
// module, not an editor's or copier's temporary file.
func relevant(path string) bool {
	name := filepath.Base(path)
	if IsManifestName(name) {
		return true
	}
	return strings.HasSuffix(name, ".wasm") && !strings.HasPrefix(name, ".")
}

// fingerprint sums up the relevant files' names, sizes and times.
func (l *Live) fingerprint() string {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return "missing"
	}
	var parts []string
	for _, e := range entries {
		if !relevant(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s:%d:%d", e.Name(), info.Size(), info.ModTime().UnixNano()))
	}
	sort.Strings(parts)
	return strings.Join(parts, "|")
}
