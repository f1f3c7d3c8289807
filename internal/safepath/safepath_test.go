package safepath

import (
	"errors"
	"io/fs"
	"testing"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{"": ".", "/": ".", "a/b": "a/b", "/a/../b": "b", "../../etc/passwd": "etc/passwd", "a/./b/": "a/b"} {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	err := Unwrap(&fs.PathError{Op: "open", Path: "/srv/secret/x", Err: fs.ErrNotExist})
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != "file does not exist" {
		t.Errorf("Unwrap: %v", err)
	}
}
