package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Source reads the files of a source checkout and remembers which it read
// (path, size, sha256) for the README. Not safe for concurrent use.
type Source struct {
	root string
	read []SourceFile
}

// SourceFile is one file a conversion read.
type SourceFile struct {
	Path   string // slash-separated, relative to the checkout
	Size   int
	SHA256 string
}

// ReadFile returns the content of rel (slash-separated, relative to the
// checkout root).
func (s *Source) ReadFile(rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s not found under %s: is -from the root of the source repository's checkout?", rel, s.root)
		}
		return nil, err
	}
	sum := sha256.Sum256(b)
	s.read = append(s.read, SourceFile{Path: rel, Size: len(b), SHA256: hex.EncodeToString(sum[:])})
	return b, nil
}

// Glob returns the files matching pattern (slash-separated, relative to the
// root), sorted; an empty match is an error naming the pattern.
func (s *Source) Glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(s.root, filepath.FromSlash(pattern)))
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("no file matches %s under %s: is -from the root of the source repository's checkout?", pattern, s.root)
	}
	out := make([]string, len(m))
	for i, p := range m {
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return nil, err
		}
		out[i] = filepath.ToSlash(rel)
	}
	sort.Strings(out)
	return out, nil
}

// JSONLines decodes each non-blank line of rel into a new T and calls fn.
// A line that does not decode is an error naming the file and line.
func JSONLines[T any](s *Source, rel string, fn func(line int, v T) error) error {
	b, err := s.ReadFile(rel)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("%s:%d: %w", rel, n, err)
		}
		if err := fn(n, v); err != nil {
			return fmt.Errorf("%s:%d: %w", rel, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// JSONFile decodes the whole of rel into v.
func JSONFile(s *Source, rel string, v any) error {
	b, err := s.ReadFile(rel)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// stem returns the file name of rel without its extension.
func stem(rel string) string {
	b := path.Base(rel)
	return strings.TrimSuffix(b, path.Ext(b))
}

// gitCommit reads the commit checked out in root/.git (HEAD, a loose ref
// or packed-refs), or returns "".
func gitCommit(root string) string {
	dir := filepath.Join(root, ".git")
	head, err := os.ReadFile(filepath.Join(dir, "HEAD"))
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(h, "ref: ")
	if !isRef {
		return h
	}
	if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref))); err == nil {
		return strings.TrimSpace(string(b))
	}
	packed, err := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if sha, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref {
			return sha
		}
	}
	return ""
}
