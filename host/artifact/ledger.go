package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// earlier owns the files a store finds on disk that it did not write
// (stored before a restart): no tenant is known for them.
const earlier = "\x00earlier"

// ledger is what the store's directories hold, file by file, with whose
// write made each: MaxBytes holds at every Put, and the room a Put needs
// is taken from its own tenant's oldest files first (under Store.mu).
type ledger struct {
	loaded bool
	total  int64
	files  map[string]ledgerFile // by path
	owned  map[string]int64      // bytes by owner
}

type ledgerFile struct {
	id, owner string
	size      int64
	mod       time.Time
	pending   bool // reserved by a Put still writing it
}

// add records a file; remove forgets one.
func (l *ledger) add(path string, f ledgerFile) {
	l.remove(path)
	l.files[path] = f
	l.total += f.size
	l.owned[f.owner] += f.size
}

func (l *ledger) remove(path string) {
	f, ok := l.files[path]
	if !ok {
		return
	}
	delete(l.files, path)
	l.total -= f.size
	if l.owned[f.owner] -= f.size; l.owned[f.owner] <= 0 {
		delete(l.owned, f.owner)
	}
}

// load reads the directories once: files written before are earlier's.
// Under s.mu.
func (s *Store) load() {
	if s.led.loaded {
		return
	}
	s.led = ledger{loaded: true, files: map[string]ledgerFile{}, owned: map[string]int64{}}
	for _, f := range s.scan() {
		s.led.add(f.path, ledgerFile{id: f.id, owner: earlier, size: f.size, mod: f.mod})
	}
}

// diskFile is an artifact file found in a directory.
type diskFile struct {
	path, id string
	size     int64
	mod      time.Time
}

// scan lists the artifact files of every directory (only files named as
// artifacts; others are never touched).
func (s *Store) scan() []diskFile {
	var files []diskFile
	for _, d := range s.dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
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
			files = append(files, diskFile{filepath.Join(d, e.Name()), e.Name(), info.Size(), info.ModTime()})
		}
	}
	return files
}

// victim is the file to remove to make room for owner's write: owner's
// own oldest, else the oldest of whoever holds the most (a flood loses
// its own files, then the flooder's, never a quiet tenant's first).
// Ties by path. "" when the ledger is empty. Under s.mu.
func (l *ledger) victim(owner string) string {
	from := owner
	if l.owned[owner] == 0 {
		from = ""
		for o, n := range l.owned {
			if from == "" || n > l.owned[from] || (n == l.owned[from] && o < from) {
				from = o
			}
		}
	}
	best := ""
	for p, f := range l.files {
		if f.owner != from {
			continue
		}
		if b, ok := l.files[best]; best == "" || !ok || f.mod.Before(b.mod) || (f.mod.Equal(b.mod) && p < best) {
			best = p
		}
	}
	return best
}

// ErrFull is wrapped by a Put that cannot fit in MaxBytes.
var ErrFull = errors.New("artifact: the store is full")

// makeRoom removes files until n more bytes fit in MaxBytes, the
// writer's own first, and reserves them at path for owner. Under s.mu.
func (s *Store) makeRoom(owner, path, id string, n int64) error {
	if n > s.opts.MaxBytes {
		return fmt.Errorf("%w: %d bytes is more than the store holds (%d)", ErrFull, n, s.opts.MaxBytes)
	}
	for s.led.total+n > s.opts.MaxBytes {
		v := s.led.victim(owner)
		if v == "" {
			return fmt.Errorf("%w: %d bytes do not fit", ErrFull, n)
		}
		if err := os.Remove(v); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: could not remove %s to make room: %v", ErrFull, filepath.Base(v), err)
		}
		delete(s.byID, s.led.files[v].id)
		s.led.remove(v)
	}
	s.led.add(path, ledgerFile{id: id, owner: owner, size: n, mod: time.Now(), pending: true})
	return nil
}

// Usage reports the bytes the store holds, in all and by owner (the
// tenant of PutFor; files found from before a restart are "earlier").
// Safe for concurrent use.
func (s *Store) Usage() (total int64, byOwner map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.load()
	byOwner = map[string]int64{}
	for o, n := range s.led.owned {
		byOwner[strings.TrimPrefix(o, "\x00")] = n
	}
	return s.led.total, byOwner
}
