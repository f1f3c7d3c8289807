package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SyncOptions configure a Syncer.
type SyncOptions struct {
	// Dir is the plugin folder written into.
	Dir string
	// Sources are the references kept in the folder, in order: a tag is
	// followed (resolved at every round, pulled when it moves), a digest
	// is pinned (pulled once).
	Sources []string
	// Interval between rounds; 0 syncs once, at Run's start.
	Interval time.Duration
	// Timeout bounds one source's sync (resolve, pull, write): a registry
	// that hangs or trickles fails that source's round instead of holding
	// every later one. 0 is DefaultSyncTimeout.
	Timeout time.Duration
	// Client talks to the registries.
	Client *Client
	// Logger receives what each round did; nil discards.
	Logger *slog.Logger
	// OnUpdate, when set, is called after each plugin written, before
	// Status and Ready show it (serve reloads its catalog then, rather than
	// at the watcher's next look).
	OnUpdate func()
}

// DefaultSyncTimeout is SyncOptions.Timeout's default: a 128 MiB module
// at 1 MB/s.
const DefaultSyncTimeout = 2 * time.Minute

// SourceStatus is what a Syncer knows of one source.
type SourceStatus struct {
	Reference string `json:"reference"`
	Plugin    string `json:"plugin,omitempty"`  // the plugin it holds in the folder
	Digest    string `json:"digest,omitempty"`  // the OCI digest in the folder (the last good version)
	Version   string `json:"version,omitempty"` // that version's plugin version
	// Error is the last round's failure ("" when it succeeded): the
	// registry unreachable, the artifact refused. The folder keeps the
	// last good version.
	Error       string    `json:"error,omitempty"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	Failures    uint64    `json:"failures"` // rounds that failed, in total
	Updates     uint64    `json:"updates"`  // versions written, in total
}

// Syncer keeps a plugin folder in step with a list of OCI references.
// A round visits the sources in order; a failure of one (registry down,
// artifact refused, a name another source holds) leaves that source's
// last good version in the folder and is reported in Status; the others
// go on. Run drives rounds; Status, Ready and Rounds are safe for
// concurrent use with it and with each other. Only one Run or SyncOnce
// may run at a time.
type Syncer struct {
	opts SyncOptions
	refs []Reference
	log  *slog.Logger

	mu     sync.Mutex
	status []SourceStatus
	rounds uint64
}

// NewSyncer checks the references and reads the records a previous
// process left in the folder (a source whose plugin is on disk counts as
// held until a round says otherwise).
func NewSyncer(opts SyncOptions) (*Syncer, error) {
	if opts.Client == nil {
		return nil, errors.New("oci: SyncOptions.Client is nil")
	}
	if opts.Dir == "" {
		return nil, errors.New("oci: SyncOptions.Dir is empty")
	}
	s := &Syncer{opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	var errs []error
	for _, src := range opts.Sources {
		r, err := ParseReference(src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[r.String()] {
			errs = append(errs, fmt.Errorf("reference %q: listed twice", src))
		}
		seen[r.String()] = true
		s.refs = append(s.refs, r)
		s.status = append(s.status, SourceStatus{Reference: r.String()})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.adoptRecords()
	return s, nil
}

// adoptRecords fills the status of sources whose plugin a previous
// process pulled into the folder.
func (s *Syncer) adoptRecords() {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".oci.json") || len(name) <= len("..oci.json") {
			continue
		}
		plugin := name[1 : len(name)-len(".oci.json")]
		rec, err := ReadRecord(s.opts.Dir, plugin)
		if err != nil || rec == nil {
			continue
		}
		for i := range s.status {
			if s.status[i].Reference == rec.Reference && s.status[i].Plugin == "" && s.intact(plugin, rec) {
				s.status[i].Plugin, s.status[i].Digest, s.status[i].Version = plugin, rec.Digest, rec.Version
			}
		}
	}
}

// intact reports whether the plugin's manifest on disk is the one its
// record describes.
func (s *Syncer) intact(plugin string, rec *Record) bool {
	data, err := readRegular(filepath.Join(s.opts.Dir, plugin+".json"), 1<<20)
	return err == nil && sha256Hex(data) == rec.ManifestSHA256
}

// Status returns every source's state, in the configured order.
func (s *Syncer) Status() []SourceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SourceStatus(nil), s.status...)
}

// Rounds counts the rounds completed.
func (s *Syncer) Rounds() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds
}

// Ready reports whether every source has a version in the folder (pulled
// by this process or left by a previous one), and says which do not.
func (s *Syncer) Ready() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.status {
		if st.Digest == "" {
			if s.rounds == 0 {
				return false, "the first registry sync has not finished"
			}
			reason := "never pulled"
			if st.Error != "" {
				reason = st.Error
			}
			return false, fmt.Sprintf("%s: %s", st.Reference, reason)
		}
	}
	return true, ""
}

// Run syncs at once, then every Interval, until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	s.SyncOnce(ctx)
	if s.opts.Interval <= 0 {
		return
	}
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.SyncOnce(ctx)
		}
	}
}

// SyncOnce runs one round over every source and returns the errors of
// the sources that failed, joined.
func (s *Syncer) SyncOnce(ctx context.Context) error {
	var errs []error
	for i, r := range s.refs {
		if ctx.Err() != nil {
			break
		}
		timeout := s.opts.Timeout
		if timeout <= 0 {
			timeout = DefaultSyncTimeout
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		updated, err := s.syncOne(sctx, i, r)
		cancel()
		if updated != nil && s.opts.OnUpdate != nil {
			s.opts.OnUpdate() // before the status says the version is there
		}
		now := time.Now()
		s.mu.Lock()
		st := &s.status[i]
		st.LastAttempt = now
		if err != nil {
			st.Error = err.Error()
			st.Failures++
			errs = append(errs, err)
		} else {
			st.Error = ""
			st.LastSuccess = now
			if updated != nil {
				st.Plugin, st.Digest, st.Version = updated.Name, updated.Digest, updated.Version
				st.Updates++
			}
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("registry sync failed; the last good version stays", "source", r.String(), "error", err)
		} else if updated != nil {
			s.log.Info("plugin pulled from registry", "source", r.String(), "plugin", updated.Name,
				"version", updated.Version, "digest", updated.Digest)
		}
	}
	s.mu.Lock()
	s.rounds++
	s.mu.Unlock()
	return errors.Join(errs...)
}

// syncOne brings one source up to date; it returns the plugin written,
// or nil when the folder already had it.
func (s *Syncer) syncOne(ctx context.Context, i int, r Reference) (*Plugin, error) {
	s.mu.Lock()
	cur := s.status[i]
	s.mu.Unlock()
	ref := r.String()
	if cur.Digest != "" {
		rec, err := ReadRecord(s.opts.Dir, cur.Plugin)
		intact := err == nil && rec != nil && rec.Digest == cur.Digest && s.intact(cur.Plugin, rec)
		if intact && r.Pinned() {
			return nil, nil // a digest never moves
		}
		if intact {
			d, err := s.opts.Client.Resolve(ctx, ref)
			if err != nil {
				return nil, err
			}
			if d == cur.Digest {
				return nil, nil
			}
		}
	}
	p, err := s.opts.Client.Pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	if cur.Plugin != "" && p.Name != cur.Plugin {
		return nil, fmt.Errorf("%s now holds plugin %q, it held %q: refused (list it as a source of its own)", ref, p.Name, cur.Plugin)
	}
	s.mu.Lock()
	for j, st := range s.status {
		if j != i && st.Plugin == p.Name {
			s.mu.Unlock()
			return nil, fmt.Errorf("%s holds plugin %q, which %s holds already: refused", ref, p.Name, st.Reference)
		}
	}
	s.mu.Unlock()
	if rec, err := ReadRecord(s.opts.Dir, p.Name); err != nil {
		return nil, err
	} else if rec != nil && rec.Reference != ref && s.claimed(rec.Reference) {
		return nil, fmt.Errorf("%s holds plugin %q, which %s holds already: refused", ref, p.Name, rec.Reference)
	}
	if err := WriteDir(s.opts.Dir, p, ref, false); err != nil {
		return nil, err
	}
	return p, nil
}

// claimed reports whether a reference is one of the sources.
func (s *Syncer) claimed(ref string) bool {
	for _, r := range s.refs {
		if r.String() == ref {
			return true
		}
	}
	return false
}
