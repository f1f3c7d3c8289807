package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/toolshed/toolshed/internal/embed"
)

// diskEmbedder embeds texts through an endpoint and keeps every vector in
// a file (appended to, one record a text), so that a catalog of 100,000
// tools is embedded once across runs of `make eval`: -embed's cache.
type diskEmbedder struct {
	cs   []*embed.Client // one per endpoint; a chunk is shared out among them
	path string
	mu   sync.Mutex
	vec  map[[32]byte][]float32
}

func newDiskEmbedder(baseURLs []string, model, path string) (*diskEmbedder, error) {
	e := &diskEmbedder{path: path, vec: map[[32]byte][]float32{}}
	for _, u := range baseURLs {
		e.cs = append(e.cs, &embed.Client{BaseURL: u, Model: model, Batch: 64, CacheEntries: -1})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		var k [32]byte
		var n uint32
		if _, err := io.ReadFull(r, k[:]); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w (delete it to start over)", path, err)
		}
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > embed.MaxDimensions {
			return nil, fmt.Errorf("%s: a broken record (delete it to start over)", path)
		}
		v := make([]float32, n)
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			return nil, fmt.Errorf("%s: %w (delete it to start over)", path, err)
		}
		e.vec[k] = v
	}
	return e, nil
}

func (e *diskEmbedder) key(s string) [32]byte {
	return sha256.Sum256([]byte(e.cs[0].Model + "\x00" + s))
}

// embed sends part to the endpoints at once, a share each.
func (e *diskEmbedder) embed(ctx context.Context, part []string) ([][]float32, error) {
	out := make([][]float32, len(part))
	errs := make([]error, len(e.cs))
	share := (len(part) + len(e.cs) - 1) / len(e.cs)
	var wg sync.WaitGroup
	for i, c := range e.cs {
		lo, hi := min(i*share, len(part)), min((i+1)*share, len(part))
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Embed(ctx, part[lo:hi])
			copy(out[lo:hi], v)
			errs[i] = err
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Embed returns the texts' unit vectors, asking the endpoint for those
// not in the file and appending them to it.
func (e *diskEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]float32, len(texts))
	var todo []string
	var at []int
	for i, t := range texts {
		if v, ok := e.vec[e.key(t)]; ok {
			out[i] = v
		} else {
			todo, at = append(todo, t), append(at, i)
		}
	}
	// Texts of like length go together: an encoder pads a batch to its
	// longest text.
	sort.SliceStable(at, func(i, j int) bool { return len(texts[at[i]]) < len(texts[at[j]]) })
	for j, i := range at {
		todo[j] = texts[i]
	}
	const chunk = 2048 // saved as it goes, so an interrupted run keeps its work
	for s := 0; s < len(todo); s += chunk {
		part := todo[s:min(s+chunk, len(todo))]
		vecs, err := e.embed(ctx, part)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(e.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriter(f)
		for j, v := range vecs {
			out[at[s+j]] = v
			k := e.key(part[j])
			if _, dup := e.vec[k]; dup { // the same text twice in texts
				continue
			}
			e.vec[k] = v
			w.Write(k[:])
			binary.Write(w, binary.LittleEndian, uint32(len(v)))
			binary.Write(w, binary.LittleEndian, v)
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
