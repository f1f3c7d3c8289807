//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnGrantsParents: every folder from the grants file up to the root
// is checked as OpenSSH's StrictModes checks authorized_keys, and the
// refusal names the folder; a link does not hide one.
func TestOwnGrantsParents(t *testing.T) {
	root := t.TempDir()
	parent := filepath.Join(root, "shared")
	dir := filepath.Join(parent, "catalog", "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	grants := filepath.Join(dir, "_grants.json")
	if err := os.WriteFile(grants, []byte(`{"plugins": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkOwnGrants(grants); err != nil {
		t.Fatalf("a private path: %v", err)
	}
	refused := func(path, culprit, want string) {
		t.Helper()
		err := checkOwnGrants(path)
		if err == nil || !strings.Contains(err.Error(), culprit+" ") || !strings.Contains(err.Error(), want) {
			t.Fatalf("want a refusal naming %s (%s), got %v", culprit, want, err)
		}
	}
	// A world-writable folder two levels up: whoever can write it can
	// rename catalog/ and put their own in its place.
	os.Chmod(parent, 0o777)
	refused(grants, parent, "writable by every user")
	// Through a link to it: the real folders are checked.
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(parent, "catalog"), link); err != nil {
		t.Fatal(err)
	}
	refused(filepath.Join(link, "plugins", "_grants.json"), parent, "writable by every user")
	os.Chmod(parent, 0o755)
	if err := checkOwnGrants(filepath.Join(link, "plugins", "_grants.json")); err != nil {
		t.Fatalf("through a link to a private path: %v", err)
	}
	if os.Getuid() != 0 {
		return // what follows needs root (chown, a root-owned sticky folder)
	}
	// A root-owned folder with the sticky bit (/tmp) lets no one rename
	// what is not theirs: accepted. Writable by all without it: refused.
	os.Chmod(parent, 0o777|os.ModeSticky)
	if err := checkOwnGrants(grants); err != nil {
		t.Fatalf("a sticky root-owned parent: %v", err)
	}
	os.Chmod(parent, 0o755)
	// A folder of another user.
	if err := os.Chown(filepath.Join(parent, "catalog"), 12345, 12345); err != nil {
		t.Fatal(err)
	}
	refused(grants, filepath.Join(parent, "catalog"), "belongs to user 12345")
}
