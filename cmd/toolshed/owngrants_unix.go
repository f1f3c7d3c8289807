//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkOwnGrants refuses a plugin folder's own grants file that someone
// other than this user (or root) could have written or swapped: the file
// must be a regular file, not a symbolic link, and neither it nor any
// folder from its own up to the root may be owned by another user or
// writable by other users, or by a group other than this user's, as
// OpenSSH's StrictModes checks authorized_keys (whoever can write a
// parent folder can rename the folder under it and put their own in its
// place). One exception: a folder owned by root with the sticky bit
// (/tmp), where no one may rename or remove what another user owns. A
// folder others can write is a plugin author's foothold
// (docs/SECURITY.md); its grants file must not be theirs. The refusal
// names the path.
func checkOwnGrants(path string) error {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	check := func(p string, st os.FileInfo) error {
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		mode := st.Mode().Perm()
		sticky := st.IsDir() && st.Mode()&os.ModeSticky != 0 && sys.Uid == 0
		switch {
		case sys.Uid != uid && sys.Uid != 0:
			return fmt.Errorf("%s belongs to user %d, not to this user or root", p, sys.Uid)
		case mode&0o002 != 0 && !sticky:
			return fmt.Errorf("%s is writable by every user (mode %#o)", p, mode)
		case mode&0o020 != 0 && sys.Gid != gid && !sticky:
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
	// The folders as they are, links resolved: those are what a swap
	// would replace.
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	for {
		dst, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if err := check(dir, dst); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}
