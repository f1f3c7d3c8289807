package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/sqlcap"
	"github.com/toolshed/toolshed/host/wasm"
)

func cmdCall(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("call", stderr)
	dir := fs.String("plugins", "", pluginDirUsage)
	cacheDir := fs.String("cache-dir", "", "compilation cache directory (default: the user cache directory; \"off\": none)")
	asJSON := fs.Bool("json", false, "print the whole ABI result as JSON")
	grantsPath := fs.String("grants", "", "operator grants, caps and databases `FILE` (JSON; see docs/RUNTIME.md); default: the plugin directory's own "+catalog.GrantsFile+", else nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed call [--plugins DIR] [--grants FILE] [--json] TOOL 'JSON-ARGS'")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return errUsage
	}
	argJSON := "{}"
	if len(pos) == 2 {
		argJSON = pos[1]
	}
	if !json.Valid([]byte(argJSON)) {
		return fmt.Errorf("arguments are not valid JSON: %s", argJSON)
	}
	if *dir, err = pluginDir(*dir); err != nil {
		return err
	}
	snap, err := loadCatalog(*dir, nil)
	if err != nil {
		return err
	}
	tool, ok := snap.Tool(pos[0])
	if !ok {
		for _, e := range snap.Errors {
			fmt.Fprintf(stderr, "toolshed: skipped %s\n", indent(e.Error()))
		}
		return fmt.Errorf("no tool %q in %s (toolshed search finds tools)", pos[0], *dir)
	}
	if inside(*cacheDir, *dir) {
		return fmt.Errorf("--cache-dir %s is inside the plugin directory %s: compiled code must live in a host-owned directory", *cacheDir, *dir)
	}
	op, err := loadOperator(*dir, *grantsPath, sqlcap.Options{})
	if err != nil {
		return err
	}
	defer op.close()
	host, err := wasm.New(op.options(*cacheDir, -1, stderr))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	defer host.Close(context.Background())
	sess := host.NewSession()
	defer sess.Close(context.Background())
	res, err := sess.Call(ctx, tool, json.RawMessage(argJSON))
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, res.Content)
	}
	if res.IsError {
		return &exitError{code: 3, msg: "the tool reported an error"}
	}
	return nil
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	if path == "" || path == "off" {
		return false
	}
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
