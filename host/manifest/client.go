package manifest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolshed/toolshed/sdk/abi"
)

// ClientFeatures are what the "client" capability may ask of the MCP
// client a tool call comes from, in the order docs/MANIFEST.md lists
// them: send it log messages (notifications/message), report the call's
// progress (notifications/progress), ask its model for a completion
// (sampling/createMessage), ask its user to fill in a form
// (elicitation/create).
var ClientFeatures = []string{abi.ClientLog, abi.ClientProgress, abi.ClientSample, abi.ClientElicit}

// checkClientFeature says what is wrong with f, an entry of
// capabilities.client after those in before ("" if nothing).
func checkClientFeature(f string, before []string) string {
	if !slices.Contains(ClientFeatures, f) {
		return fmt.Sprintf("%q is not a client feature (one of %s)", f, strings.Join(ClientFeatures, ", "))
	}
	if slices.Contains(before, f) {
		return fmt.Sprintf("%q is listed twice", f)
	}
	return ""
}
