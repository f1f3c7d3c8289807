package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
)

// dataDir is where Toolshed keeps its data: $XDG_DATA_HOME/toolshed, else
// ~/.local/share/toolshed.
func dataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "toolshed")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "toolshed")
	}
	return filepath.Join(os.TempDir(), "toolshed")
}

// operator is what the operator grants plugins: caps, grants and the SQL
// databases behind the "sql" capability.
type operator struct {
	caps   wasm.Caps
	grants map[string]wasm.Grants
	sql    *sqlcap.Service
	source string // the grants file read, if any
}

func (o *operator) close() {
	if o.sql != nil {
		o.sql.Close()
	}
}

// loadOperator reads the operator's grants file, else the plugin
// directory's own (catalog.GrantsFile: the bundled catalog carries its
// plugins' grants that way, so they follow the folder however its path is
// spelled), else grants nothing. Databases are opened read-only; the
// embedded demo database is created on first use. "default" as a
// plugin's artifacts directory is DATA/artifacts (dataDir).
//
// sqlOpts are the databases' options (the zero value: the defaults).
func loadOperator(pluginDir, grantsPath string, sqlOpts sqlcap.Options) (*operator, error) {
	o := &operator{grants: map[string]wasm.Grants{}}
	dbs := map[string]sqlcap.Database{}
	if grantsPath == "" {
		own := filepath.Join(pluginDir, catalog.GrantsFile)
		if _, err := os.Lstat(own); err == nil {
			if err := checkOwnGrants(own); err != nil {
				return nil, fmt.Errorf("the plugin folder's grants are not applied: %w; fix it, or give --grants FILE (plugins.grants)", err)
			}
			grantsPath = own
		}
	}
	if grantsPath != "" {
		f, err := wasm.ReadGrantsFile(grantsPath)
		if err != nil {
			return nil, err
		}
		if o.caps, o.grants, err = wasm.LoadGrants(grantsPath); err != nil {
			return nil, err
		}
		for name, d := range f.Databases {
			dsn := d.DSN
			if d.Driver == "sqlite" && dsn != "" && !filepath.IsAbs(dsn) {
				dsn = filepath.Join(filepath.Dir(grantsPath), dsn)
			}
			dbs[name] = sqlcap.Database{Name: name, Driver: d.Driver, DSN: dsn, AllowPrivileged: d.AllowPrivileged}
		}
		for name, g := range o.grants {
			if g.Artifacts == "default" {
				g.Artifacts = filepath.Join(dataDir(), "artifacts")
				o.grants[name] = g
			}
		}
		o.source = grantsPath
	}
	needDemo := false
	for _, g := range o.grants {
		if g.SQL == "default" {
			if _, ok := dbs["default"]; !ok {
				needDemo = true
			}
		}
	}
	if needDemo {
		path := filepath.Join(dataDir(), "demo.db")
		if err := sqlcap.EnsureDemo(path); err != nil {
			return nil, err
		}
		dbs["default"] = sqlcap.Database{Name: "default", Driver: "sqlite", DSN: path}
	}
	if len(dbs) > 0 {
		list := make([]sqlcap.Database, 0, len(dbs))
		for _, d := range dbs {
			list = append(list, d)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		svc, err := sqlcap.Open(list, sqlOpts)
		if err != nil {
			return nil, err
		}
		o.sql = svc
	}
	return o, nil
}

// withLimits lowers the operator's caps to the configuration's limits:
// each field is the lower of the two where both are set (zero is the
// runtime's default ceiling).
func (o *operator) withLimits(l config.Limits) {
	lower := func(a, b int) int {
		if a <= 0 || (b > 0 && b < a) {
			return b
		}
		return a
	}
	lowerD := func(a, b time.Duration) time.Duration { return time.Duration(lower(int(a), int(b))) }
	c := &o.caps
	c.Timeout = lowerD(c.Timeout, l.Timeout)
	c.CompileTimeout = lowerD(c.CompileTimeout, l.CompileTimeout)
	c.MaxMemoryMB = lower(c.MaxMemoryMB, l.MaxMemoryMB)
	c.MaxOutputKB = lower(c.MaxOutputKB, l.MaxOutputKB)
	c.MaxLogKB = lower(c.MaxLogKB, l.MaxLogKB)
	c.MaxLogLines = lower(c.MaxLogLines, l.MaxLogLines)
	c.MaxArtifacts = lower(c.MaxArtifacts, l.MaxArtifacts)
	c.MaxArtifactMB = lower(c.MaxArtifactMB, l.MaxArtifactMB)
	c.MaxModuleMB = lower(c.MaxModuleMB, l.MaxModuleMB)
}

func (o *operator) options(cacheDir string, pool int, stderr io.Writer) *wasm.Options {
	opts := &wasm.Options{CacheDir: cacheDir, PoolSize: pool, Caps: o.caps, Grants: o.grants, Logger: newLogger(stderr)}
	if o.sql != nil {
		opts.SQL = o.sql
	}
	return opts
}

// artifactDirs are the artifact directories of the grants, sorted.
func (o *operator) artifactDirs() []string {
	var dirs []string
	for _, g := range o.grants {
		if g.Artifacts != "" && !slices.Contains(dirs, g.Artifacts) {
			dirs = append(dirs, g.Artifacts)
		}
	}
	slices.Sort(dirs)
	return dirs
}
