package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/toolshed/toolshed/sdk/abi"
)

// The "client" capability reaches the MCP client the current call came
// from (docs/ABI.md): ClientLog, Progress, Sample and Elicit. Each needs
// its feature in the manifest ("client": ["log", "progress", "sample",
// "elicit"]) and the operator's grant, and fails with an error that says
// why when the call did not come from an MCP client (the chat
// completions or Responses API, the command line) or the client lacks the
// feature.
// Pass such an error to the model as a tool error, or carry on without.

// ClientLog sends a log message to the MCP client (notifications/message).
// Level is one of MCP's: debug, info, notice, warning, error, critical,
// alert, emergency; the client's chosen level decides whether it is
// shown. Unlike Log, which writes to the host's log for the operator, it
// reaches the user's client.
func ClientLog(level, format string, args ...any) error {
	data, err := json.Marshal(fmt.Sprintf(format, args...))
	if err != nil {
		return err
	}
	return call(abi.OpClientLog, abi.ClientLogRequest{Level: level, Data: data}, nil)
}

// ClientLogData is ClientLog with a logger name and any JSON-encodable
// value as the data.
func ClientLogData(level, logger string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("%s: %w", abi.OpClientLog, err)
	}
	return call(abi.OpClientLog, abi.ClientLogRequest{Level: level, Logger: logger, Data: b}, nil)
}

// Progress reports the call's progress to the MCP client
// (notifications/progress): progress must increase from one report to
// the next; total is 0 when unknown. It reports whether the notification
// was sent: false, with no error, when the client asked for no progress
// for this call, so a plugin may report progress unconditionally.
func Progress(progress, total float64, message string) (bool, error) {
	var r abi.ClientProgressReply
	err := call(abi.OpClientProgress, abi.ClientProgressRequest{Progress: progress, Total: total, Message: message}, &r)
	return r.Sent, err
}

// Sample asks the MCP client's model for a completion
// (sampling/createMessage). The client may show the request to its user
// first, and may refuse it.
func Sample(req abi.ClientSampleRequest) (*abi.ClientSampleReply, error) {
	var r abi.ClientSampleReply
	if err := call(abi.OpClientSample, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// SampleText is Sample of one user message; it returns the answer's text.
// maxTokens 0 takes the host's default.
func SampleText(prompt string, maxTokens int) (string, error) {
	r, err := Sample(abi.ClientSampleRequest{Messages: []abi.SampleMessage{{Role: "user", Text: prompt}}, MaxTokens: maxTokens})
	if err != nil {
		return "", err
	}
	return r.Text, nil
}

// Elicit asks the MCP client's user to fill in a form
// (elicitation/create): message says what for; schema is a flat JSON
// Schema object (a value that encodes to one, or json.RawMessage) whose
// properties are strings, numbers, integers, booleans or arrays of
// enumerated strings, with defaults and enums. The reply's Action is
// accept (Content then holds the values), decline or cancel.
func Elicit(message string, schema any) (*abi.ClientElicitReply, error) {
	s, ok := schema.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("%s: schema: %w", abi.OpClientElicit, err)
		}
		s = b
	}
	var r abi.ClientElicitReply
	if err := call(abi.OpClientElicit, abi.ClientElicitRequest{Message: message, Schema: s}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
