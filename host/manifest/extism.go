package manifest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ABIExtism is the value of "abi" for a plugin built with an Extism PDK:
// the module imports extism:host/env and each tool names the export
// that runs it (docs/ABI.md, "Extism plugins").
const ABIExtism = "extism"

// Input forms of an Extism tool: what its export receives as input.
const (
	// InputJSON: the call's arguments as compact JSON text (the default).
	InputJSON = "json"
	// InputTextPrefix + FIELD: the string argument FIELD, as its raw
	// UTF-8 bytes (for exports such as count_vowels that take text).
	InputTextPrefix = "text:"
)

// ServletExport is the one export of an mcp.run servlet ("servlet":
// true): it takes {"params": {"name", "arguments"}} and returns an MCP
// CallToolResult.
const ServletExport = "call"

// MaxExportBytes bounds an export name.
const MaxExportBytes = 128

// exportRE: an export name as PDKs make them (C identifiers, and the
// kebab-case some toolchains use).
var exportRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.$-]*$`)

// startExports are run by the host (or never), not as tools.
var startExports = map[string]bool{"_start": true, "_initialize": true, "__wasm_call_ctors": true, "hs_init": true, "hs_exit": true}

// IsExtism reports whether the plugin speaks the Extism ABI.
func (m *Manifest) IsExtism() bool { return m.ABI == ABIExtism }

// TextField returns FIELD when the tool's input is "text:FIELD".
func (t Tool) TextField() (string, bool) {
	return strings.CutPrefix(t.Input, InputTextPrefix)
}

// ExtismExport is the export that runs the tool: ServletExport for a
// servlet, else the tool's export.
func (m *Manifest) ExtismExport(t Tool) string {
	if m.Servlet {
		return ServletExport
	}
	return t.Export
}

// checkABI checks abi, abi_version and servlet together.
func (m *Manifest) checkABI() Errors {
	var es Errors
	bad := func(field, format string, args ...any) {
		es = append(es, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch m.ABI {
	case "":
		if m.ABIVersion != ABIVersion {
			bad("abi_version", "ABI version %d is not supported (this host speaks %d); an Extism plugin sets \"abi\": %q instead", m.ABIVersion, ABIVersion, ABIExtism)
		}
		if m.Servlet {
			bad("servlet", `only an Extism plugin can be a servlet: set "abi": %q`, ABIExtism)
		}
	case ABIExtism:
		if m.ABIVersion != 0 {
			bad("abi_version", `an Extism plugin ("abi": %q) has no abi_version: remove it`, ABIExtism)
		}
	default:
		bad("abi", "%q is not an ABI this host speaks (absent for Toolshed's own, with abi_version; or %q)", m.ABI, ABIExtism)
	}
	return es
}

// checkToolABI checks a tool's export and input against the plugin's ABI.
func (m *Manifest) checkToolABI(p string, t Tool) Errors {
	var es Errors
	bad := func(field, format string, args ...any) {
		es = append(es, &FieldError{Field: p + "." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if !m.IsExtism() {
		if t.Export != "" {
			bad("export", `only the tools of an Extism plugin ("abi": %q) name an export`, ABIExtism)
		}
		if t.Input != "" {
			bad("input", `only the tools of an Extism plugin ("abi": %q) say what their export receives`, ABIExtism)
		}
		return es
	}
	switch {
	case m.Servlet && t.Export != "" && t.Export != ServletExport:
		bad("export", "%q: a servlet's tools all run its %q export (leave export out)", t.Export, ServletExport)
	case m.Servlet:
	case t.Export == "":
		bad("export", "missing; name the module's export that runs this tool")
	case len(t.Export) > MaxExportBytes:
		bad("export", "longer than %d bytes", MaxExportBytes)
	case !exportRE.MatchString(t.Export):
		bad("export", "%q is not an export name (a letter or _, then letters, digits and _ . $ -)", t.Export)
	case startExports[t.Export]:
		bad("export", "%q initialises the module; it cannot be a tool", t.Export)
	}
	field, text := t.TextField()
	switch {
	case m.Servlet && t.Input != "":
		bad("input", "a servlet's tools receive MCP call parameters; leave input out")
	case t.Input == "" || t.Input == InputJSON:
	case !text:
		bad("input", "%q: want %q (the arguments as JSON, the default) or %q", t.Input, InputJSON, InputTextPrefix+"FIELD")
	case !keyRE.MatchString(field) && !toolNameRE.MatchString(field):
		bad("input", "%q: FIELD is not a parameter name", t.Input)
	default:
		if reason := textFieldReason(t.Parameters, field); reason != "" {
			bad("input", "%q: %s", t.Input, reason)
		}
	}
	return es
}

// textFieldReason checks that the parameter schema declares field as a
// required string, so that every valid call has the text to send.
func textFieldReason(raw json.RawMessage, field string) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return fmt.Sprintf("the parameters must declare %q as a required string", field)
	}
	prop, ok := s.Properties[field]
	if !ok {
		return fmt.Sprintf("the parameters do not declare %q", field)
	}
	if t, _ := prop.Type.(string); t != "string" {
		return fmt.Sprintf("parameter %q must be {\"type\": \"string\"}", field)
	}
	for _, r := range s.Required {
		if r == field {
			return ""
		}
	}
	return fmt.Sprintf("parameter %q must be required (every call sends its text)", field)
}
