package wasm

import (
	"bytes"
	"log/slog"
	"sync"
)

// maxPluginOutput bounds what one instance may write to stdout or stderr
// over its life; the rest is dropped (and that is logged once).
const maxPluginOutput = 64 << 10

// lineLog is a bounded writer that sends whole lines to the host log,
// tagged with the plugin and stream. It is safe for concurrent use.
type lineLog struct {
	log    *slog.Logger
	plugin string
	stream string

	mu      sync.Mutex
	buf     bytes.Buffer
	written int
	dropped bool
	tail    []byte // the last tailBytes written, for error messages
}

// tailBytes is how much of a stream Tail keeps: the end of a panic's
// message and the first frames of its stack.
const tailBytes = 1024

func newLineLog(log *slog.Logger, plugin, stream string) *lineLog {
	return &lineLog{log: log, plugin: plugin, stream: stream}
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if room := maxPluginOutput - l.written; len(p) > room {
		p = p[:max(room, 0)]
		if !l.dropped {
			l.dropped = true
			l.log.Warn("plugin output truncated", "plugin", l.plugin, "stream", l.stream, "limit_bytes", maxPluginOutput)
		}
	}
	l.written += len(p)
	l.tail = append(l.tail, p...)
	if len(l.tail) > tailBytes {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-tailBytes:]...)
	}
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		l.emit(string(l.buf.Next(i + 1)[:i]))
	}
	return n, nil // never fail the plugin's write
}

// Tail returns the last bytes written (up to tailBytes), trimmed.
func (l *lineLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(bytes.TrimSpace(l.tail))
}

// Flush logs a pending partial line.
func (l *lineLog) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 0 {
		l.emit(l.buf.String())
		l.buf.Reset()
	}
}

func (l *lineLog) emit(line string) {
	l.log.Info("plugin output", "plugin", l.plugin, "stream", l.stream, "line", line)
}
