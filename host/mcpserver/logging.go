package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// A session id is a bearer credential: whoever has it acts in the session
// (as its tenant). None is written to a log, by this package or by the
// SDK (which logs "session_id" at INFO): the logger they get replaces
// every attribute named session or session_id by a fingerprint, the first
// 12 hex digits of the id's SHA-256, which still tells one session's
// records from another's but cannot be sent back as an id.

// sessionAttrs are the attribute keys that carry a session id.
var sessionAttrs = map[string]bool{"session": true, "session_id": true}

// fingerprint is what the logs show of a session id.
func fingerprint(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// redactSessions wraps a handler so that no session id reaches it.
type redactSessions struct{ next slog.Handler }

var _ slog.Handler = redactSessions{}

func redactingLogger(l *slog.Logger) *slog.Logger {
	return slog.New(redactSessions{l.Handler()})
}

func (h redactSessions) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h redactSessions) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redact(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactSessions) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = redact(a)
	}
	return redactSessions{h.next.WithAttrs(out)}
}

func (h redactSessions) WithGroup(name string) slog.Handler {
	return redactSessions{h.next.WithGroup(name)}
}

// redact replaces a session id attribute's value by its fingerprint, in
// groups too.
func redact(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = redact(x)
		}
		return slog.Group(a.Key, out...)
	case sessionAttrs[a.Key]:
		return slog.String(a.Key, fingerprint(v.String()))
	}
	return a
}
