// Package safepath turns untrusted paths (from plugins or the model) into
// paths an os.Root accepts, and errors into text that does not reveal where
// the root lives on the host.
package safepath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// Clean makes p relative to a root: slash-separated, cleaned, "." for the
// root itself. Leading slashes are dropped; what still names a parent is
// refused. os.Root then refuses symbolic links that leave the root.
func Clean(p string) (string, error) {
	c := path.Clean("/" + p)[1:]
	if c == "" {
		c = "."
	}
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("invalid path %q", p)
	}
	return c, nil
}

// Unwrap drops the host path an *fs.PathError carries.
func Unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
