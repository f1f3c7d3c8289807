package host

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolshed/toolshed/host/artifact"
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
