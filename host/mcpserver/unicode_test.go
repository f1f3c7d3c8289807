package mcpserver_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/host/artifact"
	"github.com/toolshed/toolshed/host/mcpserver"
)

// TestNonASCIIArtifactURI: a chart titled 各城市销售额 gets a resource URI
// percent-encoded as RFC 3986 has it (ASCII only, the name's UTF-8 bytes
// as %XX), in the embedded resource and in a link; resources/read takes
// it as sent, decoded (the raw UTF-8 form), and with lower-case hex; a
// URI that is not an artifact's, or badly encoded, is refused.
func TestNonASCIIArtifactURI(t *testing.T) {
	h, store := chartHost(t, time.Hour)
	for _, inline := range []int64{0, -1} {
		_, srv := serveMCP(t, h, &mcpserver.Options{Artifacts: store, InlineBytes: inline})
		cs, err := connect(t, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "bar chart"}}); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createBarChart", Arguments: map[string]any{"title": "各城市销售额",
			"labels": []string{"北京", "上海"}, "series": []map[string]any{{"name": "销售额", "values": []float64{120, 95}}}}})
		if err != nil || res.IsError || len(res.Content) != 2 {
			t.Fatalf("createBarChart: %+v %v", res, err)
		}
		var uri, text string
		switch c := res.Content[1].(type) {
		case *mcp.EmbeddedResource:
			uri, text = c.Resource.URI, c.Resource.Text
		case *mcp.ResourceLink:
			uri = c.URI
		}
		if !strings.HasPrefix(uri, artifact.URIPrefix) || strings.ContainsFunc(uri, func(r rune) bool { return r > unicode.MaxASCII }) {
			t.Fatalf("inline %d: URI %q is not ASCII", inline, uri)
		}
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "toolshed" || !strings.Contains(u.Path, "各城市") || !strings.Contains(uri, "%E5%90%84") {
			t.Fatalf("inline %d: URI %q does not parse to the name (%v)", inline, uri, err)
		}
		raw, _ := url.PathUnescape(uri)
		for _, form := range []string{uri, raw, strings.ToLower(uri[:len(artifact.URIPrefix)]) + strings.ToLower(uri[len(artifact.URIPrefix):])} {
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: form})
			if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "各城市销售额") {
				t.Fatalf("inline %d: resources/read %q: %+v %v", inline, form, read, err)
			}
			if text != "" && read.Contents[0].Text != text {
				t.Fatalf("inline %d: read back other bytes", inline)
			}
		}
		for _, bad := range []string{uri + "%", artifact.URIPrefix + "%ZZ", artifact.URIPrefix, artifact.URIPrefix + "../" + raw[len(artifact.URIPrefix):],
			"toolshed://other/" + raw[len(artifact.URIPrefix):]} {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bad}); err == nil {
				t.Errorf("resources/read %q succeeded", bad)
			}
		}
	}
}
