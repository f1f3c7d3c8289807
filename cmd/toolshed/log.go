package main

import (
	"io"
	"log/slog"
	"os"
)

// newLogger writes errors (everything with TOOLSHED_DEBUG=1) as text to w;
// the command itself reports what failed.
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelError
	if os.Getenv("TOOLSHED_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// newServerLogger logs info and above (debug with TOOLSHED_DEBUG=1).
func newServerLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("TOOLSHED_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
