//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
)

// fileID is what identifies a file's content without reading it.
type fileID struct {
	Dev, Ino     uint64
	Size         int64
	MTime, CTime int64 // nanoseconds
}

// identify returns the identity of the regular file at path (not
// following a symbolic link).
func identify(path string) (fileID, bool) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return fileID{}, false
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{Dev: uint64(s.Dev), Ino: uint64(s.Ino), Size: s.Size,
		MTime: st.ModTime().UnixNano(), CTime: ctime(s)}, true
}
