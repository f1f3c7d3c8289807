package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/search"
)

// bundledName is the bundled catalog's folder: the manifests, the modules
// "make plugins" builds beside them, their data and their grants
// (catalog.GrantsFile).
const bundledName = "plugin-manifests"

// catalogCandidates are the folders the bundled catalog is looked for in,
// in order: beside the binary (DIR/plugin-manifests), one level up (a
// checkout's bin/toolshed), the installed share folder
// (PREFIX/share/toolshed/plugin-manifests for PREFIX/bin/toolshed), and
// last the working directory (go run, which builds the binary elsewhere).
func catalogCandidates() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		d := filepath.Dir(exe)
		out = append(out,
			filepath.Join(d, bundledName),
			filepath.Join(filepath.Dir(d), bundledName),
			filepath.Join(filepath.Dir(d), "share", "toolshed", bundledName))
	}
	if wd, err := os.Getwd(); err == nil {
		out = append(out, filepath.Join(wd, bundledName))
	}
	return out
}

// findCatalog returns the first candidate folder that exists, else the
// catalog this binary carries (bundledcat.go); the error names every path
// tried.
func findCatalog() (string, error) {
	tried := catalogCandidates()
	for _, d := range tried {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	if dir, ok, err := embeddedCatalog(); ok {
		return dir, err
	}
	return "", fmt.Errorf("no plugin directory: the bundled catalog is in none of %s, and this binary carries none (\"make\" builds one that does); give --plugins DIR or set TOOLSHED_PLUGINS",
		strings.Join(tried, ", "))
}

// pluginDir is the plugin directory of a command: the one given (a flag
// or the configuration), else $TOOLSHED_PLUGINS, else the bundled catalog.
func pluginDir(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if d := os.Getenv("TOOLSHED_PLUGINS"); d != "" {
		return d, nil
	}
	return findCatalog()
}

// pluginDirUsage is the help text of every --plugins flag.
const pluginDirUsage = "plugin `DIR` (default $TOOLSHED_PLUGINS, else the bundled catalog beside the binary, else the one it carries)"

// admission is how every command admits a plugin, serve included: its
// manifest is valid, its module is there, matches the manifest's sha256
// and passes wasm.CheckModule (the ABI's exports and imports). So search,
// list, validate, call, run, chat, mcp and serve see the same tools.
// Admitted modules are kept in the user's cache (keptModules), so that
// calls run the version admitted whatever happens to the .wasm files.
func admission(search *search.Config) *catalog.Options {
	return &catalog.Options{Search: search, RequireModules: true, CheckModule: wasm.CheckModule, KeepModules: keptModules()}
}

// keptModules is the folder admitted modules are kept in, by sha256
// (catalog.Options.KeepModules). Every read of a kept module checks its
// sha256, so a folder others can write costs at most a read of the
// original file, never a different module.
func keptModules() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "toolshed", "modules")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("toolshed-modules-%d", os.Getuid()))
}

// loadCatalog loads dir as every command does (admission). Modules that
// passed before and have not changed since are not read again
// (verifiedFile); "plugins validate" reads them all (fresh).
func loadCatalog(dir string, search *search.Config) (*catalog.Snapshot, error) {
	return loadCatalogWith(dir, search, false)
}

func loadCatalogWith(dir string, search *search.Config, fresh bool) (*catalog.Snapshot, error) {
	opts := admission(search)
	if p := verifiedPath(); p != "" && !fresh {
		v := openVerified(p)
		opts.Verified = v
		defer v.save()
	}
	snap, err := catalog.Load(dir, opts)
	if err != nil && errors.Is(err, os.ErrNotExist) {
		if abs, aerr := filepath.Abs(dir); aerr == nil && abs != dir {
			return nil, fmt.Errorf("%w (%s)", err, abs)
		}
	}
	return snap, err
}
