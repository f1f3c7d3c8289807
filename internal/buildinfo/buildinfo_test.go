package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.4.0", nil, "v1.4.0"},
		{"v0.0.0-20260101000000-0123456789ab", nil, "v0.0.0-20260101000000-0123456789ab"},
		{"(devel)", nil, "devel"},
		{"", nil, "devel"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}, "devel+0123456789ab"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}, "devel+0123456789ab+dirty"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: c.main}, Settings: c.settings}
		if got := fromBuildInfo(bi); got != c.want {
			t.Errorf("%q %v: %q, want %q", c.main, c.settings, got, c.want)
		}
	}
	if Version() == "" {
		t.Error("Version is empty")
	}
}
