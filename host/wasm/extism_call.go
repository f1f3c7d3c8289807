package wasm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/wasm/internal/wasmcheck"
	"github.com/toolshed/toolshed/sdk/abi"
)

// extismPlugin is what the host knows of an Extism plugin from its
// manifest. It is immutable.
type extismPlugin struct {
	servlet bool
	tools   map[string]manifest.Tool
}

func newExtismPlugin(m *manifest.Manifest) *extismPlugin {
	e := &extismPlugin{servlet: m.Servlet, tools: map[string]manifest.Tool{}}
	for _, t := range m.Tools {
		if m.Servlet {
			t.Export = manifest.ServletExport
		}
		e.tools[t.Name] = t
	}
	return e
}

// initialise runs what Extism's runtime runs before a plugin's first
// call and the host's instantiation has not: a Haskell runtime's hs_init,
// or the constructors of a module built as a command (__wasm_call_ctors,
// when it has no _initialize, which instantiation ran).
func (e *extismPlugin) initialise(ctx context.Context, mod api.Module) error {
	if f := mod.ExportedFunction("hs_init"); f != nil && len(f.Definition().ParamTypes()) == 2 {
		_, err := f.Call(ctx, 0, 0)
		return err
	}
	if mod.ExportedFunction("_initialize") != nil {
		return nil
	}
	if f := mod.ExportedFunction("__wasm_call_ctors"); f != nil && len(f.Definition().ParamTypes()) == 0 {
		_, err := f.Call(ctx)
		return err
	}
	return nil
}

// importsExtism reports whether a module imports anything of the Extism
// ABI.
func importsExtism(in *wasmcheck.Interface) bool {
	for _, im := range in.Imports {
		if strings.HasPrefix(im.Module, "extism:") {
			return true
		}
	}
	return false
}

// CheckExtismModule applies the rules a module must pass to be an Extism
// plugin of this host, read from its bytes: it exports a memory, and
// imports nothing but functions of WASI preview 1 and of extism:host/env
// that this host provides (ExtismFunctions), with their signatures. Host
// functions of the plugin's own (extism:host/user) are refused: a plugin
// gets nothing the host did not define. It is safe for concurrent use.
func CheckExtismModule(code []byte) error {
	in, err := wasmcheck.ReadInterface(code)
	if err != nil {
		return fmt.Errorf("not valid WebAssembly: %w", err)
	}
	return checkExtismInterface(in)
}

func checkExtismInterface(in *wasmcheck.Interface) error {
	return checkMemoryAndImports(in, func(im wasmcheck.Import) error {
		switch im.Module {
		case wasi_snapshot_preview1.ModuleName:
			return nil
		case ExtismModule:
		case "extism:host/user":
			return fmt.Errorf("module imports the host function %s.%s: Extism host functions of the plugin's own are not provided (a Toolshed plugin gets only the host's capabilities)", im.Module, im.Name)
		default:
			return fmt.Errorf("module imports %s.%s, which this host does not provide (an Extism plugin imports only %s and %s)", im.Module, im.Name, ExtismModule, wasi_snapshot_preview1.ModuleName)
		}
		i, ok := slices.BinarySearchFunc(extismFuncs, im.Name, func(f extismFunc, name string) int { return strings.Compare(f.name, name) })
		if !ok {
			return fmt.Errorf("module imports %s.%s, which this host does not provide (it provides: %s)", im.Module, im.Name, strings.Join(extismNames(), ", "))
		}
		f := extismFuncs[i]
		if im.Func == nil || !slices.Equal(im.Func.Params, valueTypes(f.params)) || !slices.Equal(im.Func.Results, valueTypes(f.results)) {
			return fmt.Errorf("module imports %s.%s with the wrong signature (the host's is %s)", im.Module, im.Name, signature(valueTypes(f.params), valueTypes(f.results)))
		}
		return nil
	})
}

func extismNames() []string {
	out := make([]string, len(extismFuncs))
	for i, f := range extismFuncs {
		out[i] = f.name
	}
	return out
}

// CheckModuleFor checks a module against its manifest: the rules of the
// manifest's ABI (CheckModule's), and for an Extism plugin that every
// tool's export is there, taking nothing and returning an i32 or nothing.
// The compile step and "plugins validate" use it. It is safe for
// concurrent use.
func CheckModuleFor(m *manifest.Manifest, code []byte) error {
	in, err := wasmcheck.ReadInterface(code)
	if err != nil {
		return fmt.Errorf("not valid WebAssembly: %w", err)
	}
	if !m.IsExtism() {
		if importsExtism(in) {
			return fmt.Errorf(`module imports %s: it is an Extism plugin; its manifest must say "abi": %q`, ExtismModule, manifest.ABIExtism)
		}
		return checkToolshedInterface(in)
	}
	if _, ok := in.Export(abi.ExportCall); ok {
		return fmt.Errorf(`module exports %s: it is a Toolshed ABI plugin; its manifest must say "abi_version": %d, not "abi": %q`, abi.ExportCall, abi.Version, manifest.ABIExtism)
	}
	if err := checkExtismInterface(in); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		name := m.ExtismExport(t)
		if seen[name] {
			continue
		}
		seen[name] = true
		if err := checkExtismExport(in, name); err != nil {
			return err
		}
	}
	return nil
}

// checkExtismExport checks that the module exports name as a function
// () -> i32 or () (an Extism plugin function).
func checkExtismExport(in *wasmcheck.Interface, name string) error {
	e, ok := in.Export(name)
	if !ok || e.Func == nil {
		return fmt.Errorf("module does not export the function %q (its plugin functions: %s)", name, strings.Join(extismExports(in), ", "))
	}
	if len(e.Func.Params) != 0 || len(e.Func.Results) > 1 || (len(e.Func.Results) == 1 && e.Func.Results[0] != wasmcheck.I32) {
		return fmt.Errorf("export %q has the wrong signature for an Extism plugin function: %s (want () -> i32)", name, signature(e.Func.Params, e.Func.Results))
	}
	return nil
}

// ExtismPluginFunctions lists the exports of an Extism module that can be
// plugin functions (() -> i32 or ()), start and runtime functions left
// out, in the module's order ("toolshed plugins import" lists them).
func ExtismPluginFunctions(code []byte) ([]string, error) {
	in, err := wasmcheck.ReadInterface(code)
	if err != nil {
		return nil, fmt.Errorf("not valid WebAssembly: %w", err)
	}
	return extismExports(in), nil
}

func extismExports(in *wasmcheck.Interface) []string {
	var out []string
	for _, e := range in.Exports {
		if e.Func == nil || len(e.Func.Params) != 0 || len(e.Func.Results) > 1 ||
			(len(e.Func.Results) == 1 && e.Func.Results[0] != wasmcheck.I32) {
			continue
		}
		switch e.Name {
		case "_start", "_initialize", "__wasm_call_ctors", "hs_init", "hs_exit", "_rust_begin_unwind":
			continue
		}
		out = append(out, e.Name)
	}
	return out
}

// extismInput is what the tool's export receives: the arguments as
// compact JSON, one string argument's bytes, or a servlet's call request.
func (e *extismPlugin) input(t manifest.Tool, args json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, err
	}
	if e.servlet {
		name, _ := json.Marshal(t.Name)
		return fmt.Appendf(nil, `{"params":{"name":%s,"arguments":%s}}`, name, buf.Bytes()), nil
	}
	field, text := t.TextField()
	if !text {
		return buf.Bytes(), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, err
	}
	var s string
	if raw, ok := obj[field]; !ok || json.Unmarshal(raw, &s) != nil {
		return nil, fmt.Errorf("the string argument %q is missing", field)
	}
	return []byte(s), nil
}

// callExtism is run's call for an Extism plugin: the input as a block,
// the tool's export called, its output, error and return code read.
func (in *instance) callExtism(ctx context.Context, tool string, args json.RawMessage,
	fail func(error) (abi.Result, []artifact.Artifact, error)) (abi.Result, []artifact.Artifact, error) {
	p, st := in.plugin, in.ext
	t, ok := p.ext.tools[tool]
	if !ok {
		return abi.Result{Content: fmt.Sprintf("plugin %q has no tool %q", p.name, tool), IsError: true}, nil, nil
	}
	input, err := p.ext.input(t, args)
	if err != nil {
		return abi.Result{Content: "arguments: " + err.Error(), IsError: true}, nil, nil
	}
	st.reset(in)
	defer st.reset(in) // a call's blocks go with it
	st.fault, st.refused, st.logsDropped = nil, false, 0
	st.httpStatus, st.httpHeaders = 0, nil
	if err := in.holdInput(input); err != nil {
		return fail(err)
	}
	fn := in.mod.ExportedFunction(t.Export)
	if fn == nil {
		return fail(fmt.Errorf("module does not export %q", t.Export))
	}
	r, err := fn.Call(ctx)
	in.stdout.Flush()
	in.stderr.Flush()
	if st.logsDropped > 0 {
		p.host.log.Warn("plugin log messages dropped: over the log quota", "plugin", p.name, "dropped", st.logsDropped)
	}
	rc := int32(0)
	if len(r) == 1 {
		rc = api.DecodeI32(r[0])
	}
	var exit *sys.ExitError
	switch {
	case st.fault != nil && st.refused:
		// Refused by the grants: the model reads why. The call stopped
		// in the middle: the instance goes.
		in.dead = true
		in.mod.Close(context.Background())
		return abi.Result{Content: oneLine(st.fault.Error()), IsError: true}, nil, nil
	case st.fault != nil:
		return fail(st.fault)
	case errors.As(err, &exit) && exit.ExitCode() != sys.ExitCodeDeadlineExceeded && exit.ExitCode() != sys.ExitCodeContextCanceled:
		// proc_exit: its code is the return code; the module is closed.
		in.dead = true
		rc = int32(exit.ExitCode())
	case err != nil:
		return fail(describe(ctx, err))
	}
	msg := ""
	if st.errBlock != 0 {
		msg = string(st.blockBytes(st.errBlock))
	}
	if msg != "" || rc != 0 {
		if msg == "" {
			msg = fmt.Sprintf("%s returned %d", t.Export, rc)
		}
		if len(msg) > int(p.output) {
			msg = msg[:p.output]
		}
		return abi.Result{Content: strings.ToValidUTF8(msg, "\uFFFD"), IsError: true}, nil, nil
	}
	var out []byte
	if st.output.addr != 0 {
		b := st.blockBytes(st.output.addr)
		if uint64(len(b)) < st.output.n {
			// Freed (and perhaps reused) after output_set.
			return fail(fmt.Errorf("output_set: the output's block at %#x was freed before the call returned", st.output.addr))
		}
		out = bytes.Clone(b[:st.output.n])
	}
	if p.ext.servlet {
		res, err := in.servletResult(ctx, out)
		if err != nil {
			return fail(err)
		}
		saved := in.saved
		in.saved = nil
		return res, saved, nil
	}
	return outputResult(out), nil, nil
}

// holdInput stores the call's input as a block.
func (in *instance) holdInput(input []byte) (err error) {
	st := in.ext
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(extismFault)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("input: %w", f.err)
		}
	}()
	addr := st.store(in, input, "input")
	st.input = region{addr, uint64(len(input))}
	return nil
}

// blockBytes is the block at addr from its offset on, or nil when it
// was freed.
func (st *extismState) blockBytes(addr uint64) []byte {
	idx, off := addr>>addrShift, addr&offsetMask
	if idx == 0 || idx >= uint64(len(st.blocks)) || !st.live[idx] || off > uint64(len(st.blocks[idx])) {
		return nil
	}
	return st.blocks[idx][off:]
}

// outputResult is a plain export's output as a tool result: its text, and
// when it is a JSON object, that object as structured content as well.
func outputResult(out []byte) abi.Result {
	if !utf8.Valid(out) {
		return abi.Result{Content: fmt.Sprintf("the tool's output is %d bytes that are not UTF-8 text; a tool's output must be text", len(out)), IsError: true}
	}
	res := abi.Result{Content: string(out)}
	if t := bytes.TrimSpace(out); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		res.Structured = json.RawMessage(t)
	}
	return res
}

// mcpCallResult is the MCP CallToolResult a servlet's call returns.
type mcpCallResult struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

type mcpContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

// servletResult maps a servlet's MCP CallToolResult onto a Toolshed
// result: text items as the content, images, audio and blobs as artifacts
// when the plugin is granted them (otherwise a line saying what was left
// out), isError as a tool error. Output that is not such a result fails
// the call.
func (in *instance) servletResult(ctx context.Context, out []byte) (abi.Result, error) {
	var r mcpCallResult
	if err := json.Unmarshal(out, &r); err != nil {
		return abi.Result{}, fmt.Errorf("the servlet's output is not an MCP CallToolResult: %v", err)
	}
	var parts []string
	for i, c := range r.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image", "audio":
			parts = append(parts, in.servletFile(ctx, i, c.Type, c.MimeType, c.Data))
		case "resource":
			switch {
			case c.Resource == nil:
				parts = append(parts, fmt.Sprintf("[content %d: a resource without its contents]", i))
			case c.Resource.Blob == "":
				parts = append(parts, c.Resource.Text)
			default:
				parts = append(parts, in.servletFile(ctx, i, "resource "+c.Resource.URI, c.Resource.MimeType, c.Resource.Blob))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content %d of type %q left out]", i, c.Type))
		}
	}
	res := abi.Result{Content: strings.Join(parts, "\n"), IsError: r.IsError}
	if s := bytes.TrimSpace(r.StructuredContent); len(s) > 0 && s[0] == '{' {
		res.Structured = json.RawMessage(bytes.Clone(s))
	}
	if !utf8.ValidString(res.Content) {
		res.Content = strings.ToValidUTF8(res.Content, "\uFFFD")
	}
	return res, nil
}

// servletFile stores a servlet's binary content item as an artifact
// through the "artifacts" capability (its grant, quota and store), and
// returns the line that stands for it in the content.
func (in *instance) servletFile(ctx context.Context, i int, what, mime, data string) string {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return fmt.Sprintf("[content %d (%s): its data is not base64]", i, what)
	}
	req, _ := json.Marshal(abi.ArtifactRequest{Name: fmt.Sprintf("content-%d%s", i, extensionOf(mime)), ContentType: mime, Data: b})
	reply, err := in.plugin.dispatch(ctx, in, abi.OpArtifact, req)
	if err != nil {
		return fmt.Sprintf("[content %d (%s, %s, %d bytes) left out: %v]", i, what, mime, len(b), err)
	}
	a := reply.(abi.ArtifactReply)
	return fmt.Sprintf("[content %d (%s, %s, %d bytes) stored as artifact %s]", i, what, mime, a.Size, a.Name)
}

// extensionOf is a file extension for a few common types ("" for others).
func extensionOf(mime string) string {
	switch strings.ToLower(strings.TrimSpace(strings.SplitN(mime, ";", 2)[0])) {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/svg+xml":
		return ".svg"
	case "image/webp":
		return ".webp"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "application/pdf":
		return ".pdf"
	case "text/plain":
		return ".txt"
	}
	return ""
}
