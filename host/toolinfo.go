package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
)

// ToolInfo is what an MCP client is shown of a tool beside its function
// definition (name, description, parameters). None of it goes to the
// model in the OpenAI function list: titles and annotations are for the
// people and clients around it, and structured results reach OpenAI
// clients only as their text.
type ToolInfo struct {
	Title       string
	Annotations *manifest.Annotations
	// OutputSchema describes the tool's structured results; nil: none
	// declared.
	OutputSchema json.RawMessage
}

func hint(v bool) *bool { return &v }

// toolSearchInfo: tool_search changes nothing outside the session (it
// adds tools to the session's own list) and reaches nothing outside the
// catalog.
var toolSearchInfo = ToolInfo{Title: "Tool search", Annotations: &manifest.Annotations{
	ReadOnlyHint: hint(true), OpenWorldHint: hint(false)}}

// ToolInfo returns what MCP shows of a tool of this session: tool_search,
// an always-on tool or a deferred tool of the session's catalog (the zero
// ToolInfo for any other name).
func (s *Session) ToolInfo(name string) ToolInfo {
	if name == ToolSearchName {
		return toolSearchInfo
	}
	if t, ok := s.host.byName[name]; ok {
		return ToolInfo{Title: t.Title, Annotations: t.Annotations}
	}
	if t, ok := s.snap.Tool(name); ok {
		return ToolInfo{Title: t.Spec.Title, Annotations: t.Spec.Annotations, OutputSchema: t.Spec.OutputSchema}
	}
	return ToolInfo{}
}

// outputSchemas compiles deferred tools' outputSchemas once per schema
// text (the same manifest reloaded shares them). Safe for concurrent use.
type outputSchemas struct {
	mu sync.Mutex
	m  map[string]compiledSchema
}

// maxOutputSchemas bounds the cache: reloads of changed manifests add
// entries; past this it starts again.
const maxOutputSchemas = 4096

func (o *outputSchemas) get(raw json.RawMessage) compiledSchema {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.m[string(raw)]; ok {
		return c
	}
	if o.m == nil || len(o.m) >= maxOutputSchemas {
		o.m = map[string]compiledSchema{}
	}
	sch, err := manifest.CompileSchema(raw)
	c := compiledSchema{sch, err}
	o.m[string(raw)] = c
	return c
}

// checkOutput holds a deferred tool's successful result to its
// outputSchema, when it declares one: a result without structured content,
// or with content that does not match, becomes a tool error (MCP requires
// structured results to conform; a client may rely on the shape).
func (h *Host) checkOutput(t *catalog.Tool, res Result) Result {
	if res.IsError || len(t.Spec.OutputSchema) == 0 {
		return res
	}
	c := h.outputs.get(t.Spec.OutputSchema)
	if c.err != nil {
		return Result{Content: fmt.Sprintf("tool %q: its outputSchema does not compile: %v", t.Name(), c.err), IsError: true}
	}
	if len(res.Structured) == 0 {
		return Result{Content: fmt.Sprintf("tool %q declares an outputSchema but returned no structured result", t.Name()), IsError: true}
	}
	v, err := decodeAny(res.Structured)
	if err == nil {
		err = c.sch.Validate(v)
	}
	if err != nil {
		h.log.Warn("plugin result does not match its outputSchema", "tool", t.Name(), "plugin", t.Plugin.Name(), "error", oneLine(err.Error()))
		return Result{Content: fmt.Sprintf("tool %q returned a structured result that does not match its outputSchema: %s", t.Name(), oneLine(err.Error())), IsError: true}
	}
	return res
}

// artifactLines is what the model reads of a call's artifacts, after its
// result: one line each.
func (h *Host) artifactLines(as []artifact.Artifact) string {
	var b strings.Builder
	for _, a := range as {
		if h.opts.ArtifactLink != nil {
			fmt.Fprintf(&b, "\nartifact %s: %s", a.Name, h.opts.ArtifactLink(a))
		} else {
			fmt.Fprintf(&b, "\nartifact %s (%s, %d bytes)", a.Name, a.ContentType, a.Size)
		}
	}
	return b.String()
}
