package manifest

import (
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the reason a file that is not a regular file is not
// read: a named pipe, socket, device, directory or irregular file. Reading
// one could block for ever (a FIFO with no writer), never end (/dev/zero) or
// mean nothing.
type NotRegularError struct {
	Mode fs.FileMode // the file's type bits
}

// fileKinds names the file types, most specific first.
var fileKinds = []struct {
	bit  fs.FileMode
	name string
}{
	{fs.ModeNamedPipe, "named pipe (FIFO)"}, {fs.ModeSocket, "socket"}, {fs.ModeCharDevice, "character device"},
	{fs.ModeDevice, "device"}, {fs.ModeDir, "directory"}, {fs.ModeSymlink, "symbolic link"},
}

func (e *NotRegularError) Error() string {
	kind := "irregular file"
	for _, k := range fileKinds {
		if e.Mode&k.bit != 0 {
			kind = k.name
			break
		}
	}
	return "is a " + kind + ", not a regular file"
}

// oNonblock makes open return at once on a named pipe with no writer; on a
// regular file it changes nothing.
const oNonblock = syscall.O_NONBLOCK

// OpenRegular opens the file at path for reading if it is a regular file
// (after symbolic links), and never blocks doing so: the file is opened
// with O_NONBLOCK and its type checked on the open descriptor, so a file
// swapped between a check and the open is caught too. Any other file type
// gives an *fs.PathError wrapping a *NotRegularError.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	return checkRegular(f, err, path, os.Stat)
}

// OpenRegularIn is OpenRegular for a name inside root: the name (and any
// symbolic link on the way) cannot leave root.
func OpenRegularIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	return checkRegular(f, err, name, root.Stat)
}

// checkRegular takes the result of an open and keeps the file only if it
// is a regular file; when the open failed, stat says why if the file is of
// another type (a socket cannot be opened at all).
func checkRegular(f *os.File, err error, name string, stat func(string) (fs.FileInfo, error)) (*os.File, error) {
	if err != nil {
		if st, serr := stat(name); serr == nil && !st.Mode().IsRegular() {
			return nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Mode: st.Mode().Type()}}
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Mode: st.Mode().Type()}}
	}
	return f, nil
}
