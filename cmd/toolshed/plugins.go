package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/wasm"
)

func cmdPlugins(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: toolshed plugins list [--plugins DIR] [--json]\n       toolshed plugins validate DIR\n       toolshed plugins pin [--grants FILE] MANIFEST.json...\n       toolshed plugins push REF MANIFEST.json\n       toolshed plugins pull REF [DIR]")
		return errUsage
	}
	switch args[0] {
	case "list":
		return pluginsList(args[1:], stdout, stderr)
	case "validate":
		return pluginsValidate(args[1:], stdout, stderr)
	case "pin":
		return pluginsPin(args[1:], stdout, stderr)
	case "push", "pull":
		return pluginsRegistry(args[0], args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "toolshed plugins: unknown command %q (want list, validate, pin, push or pull)\n", args[0])
		return errUsage
	}
}

type pluginJSON struct {
	Name     string     `json:"name"`
	Version  string     `json:"version"`
	Manifest string     `json:"manifest"`
	Module   string     `json:"module"`
	Tools    []toolJSON `json:"tools"`
}

type toolJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type errorJSON struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

func pluginsList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins list", stderr)
	dir := fs.String("plugins", defaultPluginDir(), "plugin directory")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: toolshed plugins list [--plugins DIR] [--json]")
		return errUsage
	}
	snap, err := catalog.Load(*dir, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		v := struct {
			Generation uint64       `json:"generation"`
			Dir        string       `json:"dir"`
			Plugins    []pluginJSON `json:"plugins"`
			Errors     []errorJSON  `json:"errors"`
		}{snap.Generation, snap.Dir, []pluginJSON{}, []errorJSON{}}
		for _, p := range snap.Plugins {
			pj := pluginJSON{Name: p.Name(), Version: p.Manifest.Version, Manifest: p.ManifestPath, Module: p.ModulePath}
			for _, t := range p.Tools {
				pj.Tools = append(pj.Tools, toolJSON{t.Name(), t.Spec.Description})
			}
			v.Plugins = append(v.Plugins, pj)
		}
		for _, e := range snap.Errors {
			v.Errors = append(v.Errors, errorJSON{e.File, e.Error()})
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tTOOLS")
	for _, p := range snap.Plugins {
		var names []string
		for _, t := range p.Tools {
			names = append(names, t.Name())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name(), p.Manifest.Version, strings.Join(names, ", "))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d plugins, %d tools in %s\n", len(snap.Plugins), len(snap.Tools), snap.Dir)
	for _, e := range snap.Errors {
		fmt.Fprintf(stdout, "failed: %s\n", indent(e.Error()))
	}
	return nil
}

func pluginsValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins validate", stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: toolshed plugins validate DIR")
		return errUsage
	}
	snap, err := catalog.Load(pos[0], nil)
	if err != nil {
		return err
	}
	for _, p := range snap.Plugins {
		fmt.Fprintf(stdout, "ok      %s (%s %s, %d tools)\n", p.ManifestPath, p.Name(), p.Manifest.Version, len(p.Tools))
	}
	for _, e := range snap.Errors {
		fmt.Fprintf(stdout, "FAILED  %s\n", indent(e.Error()))
	}
	if len(snap.Errors) > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d manifests failed", len(snap.Errors), len(snap.Errors)+len(snap.Plugins))}
	}
	if len(snap.Plugins) == 0 {
		return &exitError{code: 1, msg: "no manifest (*.json) in " + pos[0]}
	}
	fmt.Fprintf(stdout, "%d manifests, %d tools: all valid\n", len(snap.Plugins), len(snap.Tools))
	return nil
}

var sha256Field = regexp.MustCompile(`("sha256"\s*:\s*")([0-9a-fA-F]*)(")`)

// pluginsPin writes the sha256 of each manifest's module into the manifest,
// keeping the rest of the file as it is. Run it after building a module.
// With --grants FILE it also pins the module in the operator's grants
// (plugins.NAME.sha256), so that the plugin's grants apply to that module
// only.
func pluginsPin(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plugins pin", stderr)
	grantsPath := fs.String("grants", "", "also write each module's sha256 into this grants `FILE` (plugins.NAME.sha256)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed plugins pin [--grants FILE] MANIFEST.json...")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	pins := map[string]string{} // plugin name → sha256, for --grants
	for _, path := range pos {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m struct {
			Wasm string `json:"wasm"`
		}
		if err := json.Unmarshal(data, &m); err != nil || m.Wasm == "" {
			return fmt.Errorf("%s: no \"wasm\" field to pin (is it a manifest?)", path)
		}
		module, err := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(m.Wasm)))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		sum := sha256.Sum256(module)
		hexSum := hex.EncodeToString(sum[:])
		if len(sha256Field.FindAllIndex(data, -1)) != 1 {
			return fmt.Errorf("%s: want exactly one \"sha256\" field", path)
		}
		out := sha256Field.ReplaceAll(data, []byte("${1}"+hexSum+"${3}"))
		if _, err := manifest.Decode(out); err != nil {
			return fmt.Errorf("%s: not pinned, the manifest is invalid:\n%w", path, err)
		}
		if string(out) != string(data) {
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%s: sha256 %s\n", path, hexSum)
		if m, err := manifest.Decode(out); err == nil {
			pins[m.Name] = hexSum
		}
	}
	if *grantsPath != "" {
		return pinGrants(*grantsPath, pins, stdout)
	}
	return nil
}

// pinGrants writes plugins.NAME.sha256 into the grants file for each pin,
// creating the file or the plugin's entry when missing. The file is
// rewritten as indented JSON with sorted keys; it must still load.
func pinGrants(path string, pins map[string]string, stdout io.Writer) error {
	doc := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case !os.IsNotExist(err):
		return err
	}
	plugins, _ := doc["plugins"].(map[string]any)
	if plugins == nil {
		if doc["plugins"] != nil {
			return fmt.Errorf("%s: \"plugins\" is not an object", path)
		}
		plugins = map[string]any{}
		doc["plugins"] = plugins
	}
	for name, sum := range pins {
		g, _ := plugins[name].(map[string]any)
		if g == nil {
			if plugins[name] != nil {
				return fmt.Errorf("%s: plugins.%s is not an object", path, name)
			}
			g = map[string]any{}
			plugins[name] = g
		}
		g["sha256"] = sum
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	if _, _, err := wasm.LoadGrants(tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: not pinned, the grants would not load: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(stdout, "%s: plugins.%s.sha256 %s\n", path, name, pins[name])
	}
	return nil
}
