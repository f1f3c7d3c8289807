package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/mcpserver"
)

var mcpFlagNames = []string{"plugins", "grants", "search-mode", "workspace", "skills", "shell", "no-time", "no-todo", "log-format", "log-level"}

// cmdMCP serves MCP over stdio until the client leaves: one session, the
// catalog as it was at start. Only MCP goes to stdout; logs go to stderr.
func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	l, err := loadCommand("mcp", "usage: toolshed mcp [--config FILE] [--plugins DIR] [--search-mode MODE] [flags]\n\n"+
		"Serves MCP over stdio (for Claude Desktop, IDEs, agent frameworks).", mcpFlagNames, args, stderr)
	if err != nil {
		return err
	}
	cfg := &l.Config
	logCfg := cfg.Log
	if logCfg.Level == "info" {
		logCfg.Level = "warn" // an MCP client shows stderr to its user
	}
	log := newConfigLogger(logCfg, stderr)
	snap, err := loadCatalog(cfg.Plugins.Dir, nil)
	if err != nil {
		return err
	}
	for _, e := range snap.Errors {
		log.Warn("plugin manifest skipped", "file", e.File, "error", e.Err)
	}
	ag, err := newAgent(cfg, func() *catalog.Snapshot { return snap }, log, stderr, false, nil)
	if err != nil {
		return err
	}
	defer ag.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go sweepArtifacts(ctx, ag, log)
	return mcpserver.New(ag.host, &mcpserver.Options{Logger: log, Version: version, Artifacts: ag.artifacts,
		InlineBytes: inlineBytes(cfg.Artifacts.InlineKB), MaxBodyBytes: cfg.Server.MaxBodyBytes,
		Dispatcher: cfg.Server.MCP.Dispatcher}).RunStdio(ctx, stdin, stdout)
}
