package main

import (
	"io"
	"log/slog"
	"os"
)

// newLogger writes warnings and errors (everything with TOOLSHED_DEBUG=1)
// as text to w.
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("TOOLSHED_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
