// Command clientkit is the test plugin of the "client" capability: each
// tool repeats one client.* operation as often as asked and reports what
// the host answered, so that tests can try the limits as a hostile plugin
// would (a flood of notifications, oversized messages, one request too
// many).
package main

import (
	"encoding/json"
	"strings"

	"github.com/toolshed/toolshed/sdk"
	"github.com/toolshed/toolshed/sdk/abi"
)

// report is what every tool returns: how many operations succeeded, what
// they returned, and the error that stopped them.
type report struct {
	OK      int    `json:"ok"`
	Replies []any  `json:"replies,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (r *report) fail(err error) sdk.Result {
	r.Error = err.Error()
	return sdk.JSON(r)
}

type logArgs struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Times   int    `json:"times"`
	Pad     int    `json:"pad"` // bytes added to the message
}

type progressArgs struct {
	Values []float64 `json:"values"`
}

type sampleArgs struct {
	Prompt    string `json:"prompt"`
	Times     int    `json:"times"`
	MaxTokens int    `json:"max_tokens"`
}

type elicitArgs struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
	Times   int             `json:"times"`
}

func init() {
	sdk.Handle("clientLog", func(a logArgs) (sdk.Result, error) {
		var r report
		msg := a.Message + strings.Repeat("x", a.Pad)
		for range max(a.Times, 1) {
			if err := sdk.ClientLog(a.Level, "%s", msg); err != nil {
				return r.fail(err), nil
			}
			r.OK++
		}
		return sdk.JSON(r), nil
	})
	sdk.Handle("clientProgress", func(a progressArgs) (sdk.Result, error) {
		var r report
		for _, v := range a.Values {
			sent, err := sdk.Progress(v, 100, "")
			if err != nil {
				return r.fail(err), nil
			}
			r.OK++
			r.Replies = append(r.Replies, sent)
		}
		return sdk.JSON(r), nil
	})
	sdk.Handle("clientSample", func(a sampleArgs) (sdk.Result, error) {
		var r report
		for range max(a.Times, 1) {
			out, err := sdk.Sample(abi.ClientSampleRequest{Messages: []abi.SampleMessage{{Role: "user", Text: a.Prompt}},
				SystemPrompt: "Answer briefly.", MaxTokens: a.MaxTokens})
			if err != nil {
				return r.fail(err), nil
			}
			r.OK++
			r.Replies = append(r.Replies, out)
		}
		return sdk.JSON(r), nil
	})
	sdk.Handle("clientElicit", func(a elicitArgs) (sdk.Result, error) {
		var r report
		for range max(a.Times, 1) {
			out, err := sdk.Elicit(a.Message, a.Schema)
			if err != nil {
				return r.fail(err), nil
			}
			r.OK++
			r.Replies = append(r.Replies, out)
		}
		return sdk.JSON(r), nil
	})
}

func main() {}
