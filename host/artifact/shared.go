package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Shared is where a fleet of replicas keeps a copy of every artifact (up
// to a size), so that an artifact link made by one replica is served by
// every other without a shared volume (toolshed serve: the session store,
// server.sessions.store). Implementations are safe for concurrent use.
type Shared interface {
	// PutBlob keeps data under id for ttl.
	PutBlob(ctx context.Context, id string, data []byte, ttl time.Duration) error
	// GetBlob returns what PutBlob kept under id; ErrNotFound when
	// nothing is (never kept, or past its ttl).
	GetBlob(ctx context.Context, id string) ([]byte, error)
}

// DefaultSharedMaxBytes is the largest artifact Share copies by default.
const DefaultSharedMaxBytes = 8 << 20

// sharedTimeout bounds one exchange with the Shared store: an artifact
// write or a link is delayed at most this long by a store that is away.
const sharedTimeout = 2 * time.Second

// shared is a Store's Shared, as Share set it (under Store.mu).
type shared struct {
	to       Shared
	cacheDir string
	maxBytes int64
}

// Share makes the store keep a copy of each artifact it stores, up to
// maxBytes (0: DefaultSharedMaxBytes), in sh for MaxAge, and serve an id
// its directories do not hold from sh, copied into cacheDir (then swept
// like any of its directories). A larger artifact, or one written while sh
// is unreachable, is served by this replica alone. Call it before the
// store is used.
func (s *Store) Share(sh Shared, cacheDir string, maxBytes int64) {
	if maxBytes <= 0 {
		maxBytes = DefaultSharedMaxBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared = &shared{to: sh, cacheDir: filepath.Clean(cacheDir), maxBytes: maxBytes}
	s.addDir(s.shared.cacheDir)
}

// putShared copies a stored artifact to the Shared store, when there is
// one and the artifact fits. The local copy stands whatever happens.
func (s *Store) putShared(a Artifact, data []byte) {
	s.mu.Lock()
	sh := s.shared
	s.mu.Unlock()
	if sh == nil || int64(len(data)) > sh.maxBytes {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	sh.to.PutBlob(ctx, a.ID, data, s.opts.MaxAge) // its error: the store logs and counts it
}

// getShared fetches an artifact this replica does not hold from the
// Shared store into the cache directory.
func (s *Store) getShared(id string) (Artifact, error) {
	s.mu.Lock()
	sh := s.shared
	s.mu.Unlock()
	if sh == nil {
		return Artifact{}, ErrNotFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	data, err := sh.to.GetBlob(ctx, id)
	if err != nil {
		return Artifact{}, ErrNotFound
	}
	if err := os.MkdirAll(sh.cacheDir, 0o755); err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	full := filepath.Join(sh.cacheDir, id)
	// Written aside and renamed: a concurrent Get of the same id never
	// sees half a file.
	tmp, err := os.CreateTemp(sh.cacheDir, ".fetch-*")
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), full)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return Artifact{}, fmt.Errorf("artifact: %w", werr)
	}
	name := id[33:]
	a := Artifact{ID: id, Name: name, ContentType: typeOf(name), Size: int64(len(data)), Created: time.Now(), Path: full}
	s.mu.Lock()
	s.byID[id] = a
	s.mu.Unlock()
	return a, nil
}
