// Package builtin holds Toolshed's always-on tools, implemented in Go.
// Each constructor returns a host.GoTool; the host decides which to enable.
// The tools are safe for concurrent use.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolshed/toolshed/host"
	"github.com/toolshed/toolshed/host/manifest"
)

// CurrentTime returns the current_time tool: the time now in a time zone,
// and conversion of a given time between zones. now is the clock (nil:
// time.Now), so tests can fix it.
func CurrentTime(now func() time.Time) host.GoTool {
	if now == nil {
		now = time.Now
	}
	return host.GoTool{
		Name:        "current_time",
		Title:       "Current time",
		Annotations: &manifest.Annotations{ReadOnlyHint: yes, OpenWorldHint: no},
		Description: "The current date and time in a time zone (default UTC), or a given time converted between time zones.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"timezone":{"type":"string","description":"IANA time zone for the answer, e.g. Asia/Shanghai (default UTC)"},` +
			`"time":{"type":"string","description":"A time to convert instead of now, RFC 3339 (2026-12-02T09:30:00+08:00)"}}}`),
		Call: func(_ context.Context, raw json.RawMessage) (host.Result, error) {
			var a struct {
				Timezone string `json:"timezone"`
				Time     string `json:"time"`
			}
			if err := json.Unmarshal(raw, &a); err != nil {
				return host.Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
			}
			zone := a.Timezone
			if zone == "" {
				zone = "UTC"
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return host.Result{Content: fmt.Sprintf("unknown time zone %q: use an IANA name such as Europe/Paris or Asia/Shanghai", zone), IsError: true}, nil
			}
			t := now()
			if a.Time != "" {
				if t, err = time.Parse(time.RFC3339, a.Time); err != nil {
					return host.Result{Content: fmt.Sprintf("cannot read time %q: want RFC 3339, e.g. 2026-12-02T09:30:00+08:00", a.Time), IsError: true}, nil
				}
			}
			t = t.In(loc)
			return host.Result{Content: fmt.Sprintf("%s (%s, %s)", t.Format(time.RFC3339), t.Weekday(), zone)}, nil
		},
	}
}
