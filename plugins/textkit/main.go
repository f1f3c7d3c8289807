// Command textkit is the example Toolshed plugin: small text utilities,
// built by "make plugins" into plugin-manifests/textkit.wasm.
package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolshed/toolshed/sdk"
)

type textArgs struct {
	Text string `json:"text"`
}

type stats struct {
	Characters int `json:"characters"`
	Bytes      int `json:"bytes"`
	Words      int `json:"words"`
	Lines      int `json:"lines"`
	Han        int `json:"han"`
}

func init() {
	sdk.Handle("textStats", func(a textArgs) (sdk.Result, error) {
		s := stats{Characters: utf8.RuneCountInString(a.Text), Bytes: len(a.Text),
			Words: len(strings.Fields(a.Text)), Lines: strings.Count(a.Text, "\n")}
		if a.Text != "" && !strings.HasSuffix(a.Text, "\n") {
			s.Lines++
		}
		for _, r := range a.Text {
			if unicode.Is(unicode.Han, r) {
				s.Han++
			}
		}
		sdk.Log("debug", "textStats: %d bytes", s.Bytes)
		return sdk.JSON(s), nil
	})
	sdk.Handle("slugify", func(a textArgs) (sdk.Result, error) {
		var b strings.Builder
		dash := false
		for _, r := range strings.ToLower(a.Text) {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(r)
				dash = false
			} else if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		slug := strings.TrimSuffix(b.String(), "-")
		if slug == "" {
			return sdk.Errorf("the text has no letters or digits to make a slug from"), nil
		}
		return sdk.Text("%s", slug), nil
	})
}

func main() {}
