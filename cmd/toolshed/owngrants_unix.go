//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkOwnGrants refuses a plugin folder's own grants file that someone
// other than this user (or root) could have written: the file must be a
// regular file, not a symbolic link, and neither it nor the folder may be
// owned by another user or writable by other users, or by a group other
// than this user's. A folder others can write is a plugin author's
// foothold (docs/SECURITY.md); its grants file must not be theirs.
func checkOwnGrants(path string) error {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	check := func(p string, st os.FileInfo) error {
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		mode := st.Mode().Perm()
		switch {
		case sys.Uid != uid && sys.Uid != 0:
			return fmt.Errorf("%s belongs to user %d, not to this user or root", p, sys.Uid)
		case mode&0o002 != 0:
			return fmt.Errorf("%s is writable by every user (mode %#o)", p, mode)
		case mode&0o020 != 0 && sys.Gid != gid:
			return fmt.Errorf("%s is writable by group %d (mode %#o)", p, sys.Gid, mode)
		}
		return nil
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a symbolic link or another type)", path)
	}
	if err := check(path, st); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return check(dir, dst)
}
