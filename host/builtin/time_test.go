package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCurrentTime(t *testing.T) {
	fixed := time.Date(2026, 12, 2, 16, 43, 0, 0, time.UTC)
	tool := CurrentTime(func() time.Time { return fixed })
	for args, want := range map[string]string{
		`{}`:                           "2026-12-02T16:43:00Z (Wednesday, UTC)",
		`{"timezone":"Asia/Shanghai"}`: "2026-12-03T00:43:00+08:00 (Thursday, Asia/Shanghai)",
		`{"time":"2026-01-01T09:00:00+08:00","timezone":"Europe/Paris"}`: "2026-01-01T02:00:00+01:00 (Thursday, Europe/Paris)",
	} {
		res, err := tool.Call(context.Background(), json.RawMessage(args))
		if err != nil || res.IsError || res.Content != want {
			t.Errorf("%s: %+v %v, want %q", args, res, err, want)
		}
	}
	for args, want := range map[string]string{`{"timezone":"Mars/Base"}`: "unknown time zone", `{"time":"yesterday"}`: "RFC 3339"} {
		res, _ := tool.Call(context.Background(), json.RawMessage(args))
		if !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %+v", args, res)
		}
	}
}
