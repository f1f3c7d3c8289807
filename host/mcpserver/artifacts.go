package mcpserver

import (
	"context"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host/artifact"
)

// Artifacts reach MCP clients as content of the call's result: a raster
// image as image content, a sound (WAV, MP3, Ogg) as audio content,
// anything else (an SVG chart, a CSV) as an
// embedded resource, both up to InlineBytes; a larger one as a resource
// link. Every artifact is also a resource (toolshed://artifacts/ID) that
// resources/read serves from the store, for links and for clients that
// keep only the URI.

// rasterTypes are sent as image content.
var rasterTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// artifactContent is the content block of one artifact.
func (s *Server) artifactContent(a artifact.Artifact) mcp.Content {
	size := a.Size
	link := &mcp.ResourceLink{URI: resourceURI(a.ID), Name: a.Name, MIMEType: a.ContentType, Size: &size}
	if a.Size > s.opts.InlineBytes {
		return link
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		s.opts.Logger.Warn("mcp: artifact unreadable; sent as a link", "artifact", a.ID, "error", err)
		return link
	}
	if rasterTypes[a.ContentType] {
		return &mcp.ImageContent{Data: data, MIMEType: a.ContentType}
	}
	if strings.HasPrefix(a.ContentType, "audio/") {
		return &mcp.AudioContent{Data: data, MIMEType: a.ContentType}
	}
	return &mcp.EmbeddedResource{Resource: resourceContents(a, data)}
}

// resourceContents is an artifact's bytes as MCP resource contents: text
// for textual types (SVG included), a blob otherwise.
func resourceContents(a artifact.Artifact, data []byte) *mcp.ResourceContents {
	rc := &mcp.ResourceContents{URI: resourceURI(a.ID), MIMEType: a.ContentType}
	textual := strings.HasPrefix(a.ContentType, "text/") || a.ContentType == "image/svg+xml" || a.ContentType == "application/json"
	if textual && utf8.Valid(data) {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return rc
}

// resourceURI is an artifact's resource URI as RFC 3986 has it: the id
// (whose name may be 各城市-sales.svg) percent-encoded as a path segment
// (UTF-8 bytes as %XX).
func resourceURI(id string) string { return artifact.URIPrefix + url.PathEscape(id) }

// artifactID is the id a resource URI names, percent-encoded or not (a
// client may send the URI as it got it, or decoded, or encoded again by
// its own URI library): "" and false when it names no artifact.
func artifactID(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, artifact.URIPrefix)
	if !ok || rest == "" {
		return "", false
	}
	id, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return id, true
}

// canonicalURIs rewrites the URI of a resources/read of an artifact to
// resourceURI's form before the SDK matches it against the template (whose
// {id} takes only unreserved and percent-encoded characters): the raw
// UTF-8 form a client copied from an older server's answer, and the
// percent-encoded form, both reach the handler.
func canonicalURIs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "resources/read" {
			if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil {
				if id, ok := artifactID(p.URI); ok {
					p.URI = resourceURI(id)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// addArtifactResources lets a session read artifacts by URI.
func (s *Server) addArtifactResources(srv *mcp.Server) {
	if s.opts.Artifacts == nil {
		return
	}
	srv.AddReceivingMiddleware(canonicalURIs)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: artifact.URIPrefix + "{id}", Name: "artifact",
		Title: "Tool artifacts", Description: "Files tools produced (charts, reports), by id."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			id, ok := artifactID(uri)
			if !ok {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			a, data, err := s.opts.Artifacts.Read(id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{resourceContents(a, data)}}, nil
		})
}
