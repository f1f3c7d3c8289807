package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/wasm"
)

// pluginsImport writes the manifest of an Extism plugin: for a servlet,
// its tools as its describe export lists them, run once in the sandbox
// with nothing granted; for a plain plugin, a stub with one tool per
// plugin function, whose descriptions the author fills in (validation
// refuses the stub until then).
func pluginsImport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins import", stderr)
	extism := fs.Bool("extism", false, "the module is an Extism plugin (the only kind import knows)")
	servlet := fs.Bool("servlet", false, "the module is an mcp.run servlet: its tools come from its describe export")
	name := fs.String("name", "", "the plugin's name (default: the module's file name)")
	out := fs.String("o", "", "the manifest `FILE` to write (default: beside the module, NAME.json)")
	force := fs.Bool("force", false, "overwrite the manifest if it exists")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins import --extism [--servlet] [--name NAME] [-o FILE] MODULE.wasm\n\n"+
			"Writes the manifest of an Extism plugin. A servlet's tools are read from its describe export,\n"+
			"run once in the sandbox with nothing granted; a plain plugin gets one tool per exported\n"+
			"function, whose descriptions (and parameters) you fill in.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	if !*extism {
		return errors.New("plugins import: say what the module is: --extism (the only kind import knows)")
	}
	modPath := pos[0]
	code, err := os.ReadFile(modPath)
	if err != nil {
		return err
	}
	if err := wasm.CheckExtismModule(code); err != nil {
		return fmt.Errorf("%s: %w", modPath, err)
	}
	if *name == "" {
		*name = pluginName(strings.TrimSuffix(filepath.Base(modPath), ".wasm"))
	}
	if *out == "" {
		*out = filepath.Join(filepath.Dir(modPath), *name+".json")
	}
	wasmRel, err := filepath.Rel(filepath.Dir(*out), modPath)
	if err != nil || strings.HasPrefix(filepath.ToSlash(wasmRel), "../") {
		return fmt.Errorf("the manifest %s must be in the module's folder or above it (a manifest names its module relative to itself)", *out)
	}
	sum := sha256.Sum256(code)
	m := manifest.Manifest{Name: *name, Version: "0.1.0", ABI: manifest.ABIExtism, Servlet: *servlet,
		Wasm: filepath.ToSlash(wasmRel), SHA256: hex.EncodeToString(sum[:])}
	stub := false
	if *servlet {
		if m.Tools, err = servletTools(m, code); err != nil {
			return fmt.Errorf("%s: %w", modPath, err)
		}
	} else {
		fns, err := wasm.ExtismPluginFunctions(code)
		if err != nil {
			return err
		}
		if len(fns) == 0 {
			return fmt.Errorf("%s exports no plugin function (() -> i32)", modPath)
		}
		for _, f := range fns {
			m.Tools = append(m.Tools, manifest.Tool{Name: toolName(f), Export: f, Input: manifest.InputJSON,
				Parameters: json.RawMessage(`{"type": "object", "properties": {}}`)})
		}
		stub = true
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(*out, flag, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists (--force overwrites it)", *out)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s)\n", *out, plural(len(m.Tools), "tool"))
	if stub {
		fmt.Fprintf(stdout, "fill in each tool's description (and its parameters, and \"input\": \"text:FIELD\" for an export that takes text);\n"+
			"\"toolshed plugins validate\" refuses the manifest until then\n")
	}
	return nil
}

// servletTools runs the servlet's describe export once in the sandbox,
// nothing granted, default limits, and returns its tools.
func servletTools(m manifest.Manifest, code []byte) ([]manifest.Tool, error) {
	dir, err := os.MkdirTemp("", "toolshed-import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	probe := m
	probe.Servlet, probe.Wasm = false, "module.wasm"
	probe.Tools = []manifest.Tool{{Name: "describe", Description: "the servlet's tools", Export: "describe"}}
	b, _ := json.Marshal(probe)
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), code, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "probe.json"), b, 0o600); err != nil {
		return nil, err
	}
	snap, err := catalog.Load(dir, &catalog.Options{RequireModules: true, CheckModule: wasm.CheckModule})
	if err != nil {
		return nil, err
	}
	if len(snap.Errors) > 0 {
		return nil, snap.Errors[0]
	}
	tool, _ := snap.Tool("describe")
	h, err := wasm.New(&wasm.Options{CacheDir: "off", PoolSize: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer h.Close(context.Background())
	s := h.NewSession()
	defer s.Close(context.Background())
	res, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	if res.IsError {
		return nil, fmt.Errorf("describe: %s", res.Content)
	}
	var list struct {
		Tools []struct {
			Name         string                `json:"name"`
			Title        string                `json:"title"`
			Description  string                `json:"description"`
			InputSchema  json.RawMessage       `json:"inputSchema"`
			OutputSchema json.RawMessage       `json:"outputSchema"`
			Annotations  *manifest.Annotations `json:"annotations"`
		} `json:"tools"`
	}
	dec := json.NewDecoder(strings.NewReader(res.Content))
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("describe: its output is not an MCP tool list: %v", err)
	}
	if len(list.Tools) == 0 {
		return nil, errors.New("describe lists no tool")
	}
	var tools []manifest.Tool
	for _, t := range list.Tools {
		params := t.InputSchema
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type": "object", "properties": {}}`)
		}
		out := t.OutputSchema
		if string(bytes.TrimSpace(out)) == "null" {
			out = nil
		}
		tools = append(tools, manifest.Tool{Name: t.Name, Title: t.Title, Description: t.Description, Parameters: params,
			OutputSchema: out, Annotations: t.Annotations})
	}
	// What the servlet says goes through the manifest's own checks.
	check := m
	check.Tools = tools
	if es := check.Validate(); len(es) > 0 {
		return nil, fmt.Errorf("describe lists tools this host cannot take as they are:\n%w", es)
	}
	return tools, nil
}

var nonName = regexp.MustCompile(`[^a-z0-9_-]+`)

// pluginName makes a plugin name of a file name: lowercase, a-z 0-9 _ -,
// starting with a letter.
func pluginName(s string) string {
	s = strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "plugin-" + s
	}
	return strings.TrimRight(s[:min(len(s), 64)], "-_")
}

var nonTool = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// toolName makes a tool name of an export name.
func toolName(s string) string {
	s = strings.Trim(nonTool.ReplaceAllString(s, "_"), "_-")
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "fn_" + s
	}
	return s[:min(len(s), 64)]
}
