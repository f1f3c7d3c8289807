// Package buildinfo names the version of the running build, for
// serverInfo.version (MCP) and toolshed version.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is the main module's version as the Go toolchain recorded it:
// a release tag ("v1.2.3") when built with go install MODULE@VERSION, a
// pseudo-version from a VCS checkout, else "devel" with the commit when
// the build recorded one ("devel+0123abcd4567", "+dirty" with local
// changes), else "devel".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel+" + rev
	if dirty {
		v += "+dirty"
	}
	return strings.TrimSpace(v)
}
