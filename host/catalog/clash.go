package catalog

import (
	"fmt"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/names"
)

// Clashes reports the tools of s's plugins whose names clash (names.Clash:
// case, separators, look-alike characters) with a tool of another plugin
// of into, the folder they are to join, where serve would refuse them. A
// plugin of into with the same name is the version an update replaces: its
// tools do not count. One LoadError per manifest, in the order of
// s.Plugins (sorted by name).
func (s *Snapshot) Clashes(into *Snapshot) []LoadError {
	var out []LoadError
	for _, p := range s.Plugins {
		var set names.Set[*Tool]
		for _, t := range into.Tools {
			if t.Plugin.Name() != p.Name() {
				set.Add(t.Name(), t)
			}
		}
		var es manifest.Errors
		for i, t := range p.Manifest.Tools {
			other, tl, ok := set.Find(t.Name)
			if !ok {
				continue
			}
			es = append(es, &manifest.FieldError{File: p.ManifestPath, Field: fmt.Sprintf("tools[%d].name", i),
				Reason: fmt.Sprintf("tool %q clashes with tool %q of plugin %q in %s (%s): serve there would refuse this plugin",
					t.Name, other, tl.Plugin.Name(), into.Dir, tl.Plugin.ManifestPath)})
		}
		if len(es) > 0 {
			out = append(out, LoadError{File: p.ManifestPath, Err: es})
		}
	}
	return out
}
