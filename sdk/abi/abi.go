// Package abi holds the wire format between the Toolshed host and plugins:
// ABI version 1, documented in docs/ABI.md. It is a leaf package (standard
// library only) shared by the host and the plugin SDK, so both sides read
// and write the same types.
//
// The values are plain data; none is safe for concurrent mutation.
package abi

import "encoding/json"

// Version is the ABI version this package describes.
const Version = 1

// Exports a plugin module provides (besides memory and WASI's _initialize).
const (
	// ExportVersion: () -> i32, the ABI version the module speaks.
	ExportVersion = "toolshed_abi_version"
	// ExportAlloc: (size i32) -> i32, a pointer to size writable bytes the
	// host fills with a request. The buffer stays valid until the next
	// ExportCall returns.
	ExportAlloc = "toolshed_alloc"
	// ExportCall: (ptr i32, len i32) -> i64, runs the request at ptr/len
	// and returns the result's pointer (high 32 bits) and length (low 32
	// bits). The result stays valid until the next call into the module.
	ExportCall = "toolshed_call"
	// ExportRequestBuffer: () -> i64, optional. Returns the pointer (high
	// 32 bits) and capacity (low 32 bits) of a buffer the module reserves
	// for requests for the instance's life. The host may write a request
	// that fits there and call ExportCall on it without ExportAlloc. The
	// host calls it once per instance; a capacity of 0 means none.
	ExportRequestBuffer = "toolshed_request_buffer"
	// ExportInitialize is the reactor's initialiser; a plugin has no _start.
	ExportInitialize = "_initialize"
)

// Host functions, in import module HostModule.
const (
	HostModule = "toolshed"
	// HostCall: (op_ptr, op_len, req_ptr, req_len i32) -> i32. Performs a
	// capability operation; returns the length of the reply (a Reply in
	// JSON) that HostResult then copies out, or -1 if the op or request
	// could not be read.
	HostCall = "host_call"
	// HostResult: (buf_ptr, buf_len i32) -> i32. Copies the pending reply
	// into the buffer and returns its length, or -1 when there is no
	// pending reply or the buffer is too small (nothing is copied then).
	HostResult = "host_result"
)

// Request is what the host sends to ExportCall.
type Request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Result is what ExportCall returns: text for the model, optional
// structured JSON, and whether it is a tool error (which the model reads
// and can recover from).
type Result struct {
	Content    string          `json:"content"`
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
}

// Pack joins a pointer and a length into ExportCall's i64 result.
func Pack(ptr, length uint32) uint64 { return uint64(ptr)<<32 | uint64(length) }

// Unpack splits ExportCall's i64 result.
func Unpack(v uint64) (ptr, length uint32) { return uint32(v >> 32), uint32(v) }

// Capability operations (the op of HostCall) and their requests and replies.
const (
	OpLog       = "log"          // LogRequest → nothing
	OpConfigGet = "config.get"   // ConfigRequest → ConfigReply
	OpFSRead    = "fs.read"      // FSRequest → FSReadReply
	OpFSList    = "fs.list"      // FSRequest → FSListReply
	OpHTTP      = "http.fetch"   // HTTPRequest → HTTPReply
	OpSQL       = "sql.query"    // SQLRequest → SQLReply
	OpArtifact  = "artifact.put" // ArtifactRequest → ArtifactReply

	// The MCP client a call came from (the "client" capability): each
	// fails with an error naming why when the call has no MCP client or
	// the client lacks the feature.
	OpClientLog      = "client.log"      // ClientLogRequest → nothing
	OpClientProgress = "client.progress" // ClientProgressRequest → ClientProgressReply
	OpClientSample   = "client.sample"   // ClientSampleRequest → ClientSampleReply
	OpClientElicit   = "client.elicit"   // ClientElicitRequest → ClientElicitReply
)

// The features of the "client" capability, as the manifest and the
// grants name them.
const (
	ClientLog      = "log"
	ClientProgress = "progress"
	ClientSample   = "sample"
	ClientElicit   = "elicit"
)

// Reply is HostCall's answer: OK holds the op's reply, or Error says why
// it failed (for instance, that the capability was not granted).
type Reply struct {
	OK    json.RawMessage `json:"ok,omitempty"`
	Error string          `json:"error,omitempty"`
}

// LogRequest writes a line to the host log, tagged with the plugin.
type LogRequest struct {
	Level   string `json:"level"` // debug, info, warn, error
	Message string `json:"message"`
}

// ConfigRequest reads an operator configuration value.
type ConfigRequest struct {
	Key string `json:"key"`
}

// ConfigReply is the value.
type ConfigReply struct {
	Value string `json:"value"`
}

// FSRequest names a file or directory in an operator-named read-only mount.
type FSRequest struct {
	Mount string `json:"mount"`
	Path  string `json:"path"` // slash-separated, relative to the mount
}

// FSReadReply is a file's content (base64 in JSON).
type FSReadReply struct {
	Data []byte `json:"data"`
}

// FSListReply lists a directory, sorted by name.
type FSListReply struct {
	Entries []DirEntry `json:"entries"`
}

// DirEntry is one directory entry.
type DirEntry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir,omitempty"`
	Size int64  `json:"size"`
}

// HTTPRequest is an outbound request, checked against the operator's
// allowlist (and re-checked on every redirect).
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
}

// HTTPReply is the response; Truncated says the body hit the size cap.
type HTTPReply struct {
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers,omitempty"`
	Body      []byte            `json:"body"`
	Truncated bool              `json:"truncated,omitempty"`
}

// SQLRequest is one read-only statement with its parameters.
type SQLRequest struct {
	SQL     string `json:"sql"`
	Params  []any  `json:"params,omitempty"`
	MaxRows int    `json:"max_rows,omitempty"`
}

// ArtifactRequest stores a file the user should see (a chart, a report).
type ArtifactRequest struct {
	Name        string `json:"name"`         // a file name; the host makes it unique
	ContentType string `json:"content_type"` // e.g. image/svg+xml
	Data        []byte `json:"data"`
}

// ArtifactReply says where the artifact is.
type ArtifactReply struct {
	Name string `json:"name"` // the stored file name
	Path string `json:"path"` // where the host stored it
	Size int    `json:"size"`
}

// SQLReply holds the rows; Truncated says a row or byte cap was hit.
type SQLReply struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated,omitempty"`
}

// ClientLogRequest sends notifications/message to the MCP client. Level
// is one of MCP's (syslog's) levels: debug, info, notice, warning, error,
// critical, alert, emergency; the client's logging/setLevel decides which
// reach it. Data is any JSON value (a string for a plain message).
type ClientLogRequest struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ClientProgressRequest sends notifications/progress for the current
// call. Progress must increase from one notification to the next; Total
// is optional (0: unknown).
type ClientProgressRequest struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ClientProgressReply says whether the notification was sent: false when
// the client asked for no progress (its call carried no progressToken).
type ClientProgressReply struct {
	Sent bool `json:"sent"`
}

// ClientSampleRequest asks the MCP client's model for a completion
// (sampling/createMessage), text in and text out.
type ClientSampleRequest struct {
	Messages     []SampleMessage `json:"messages"`
	SystemPrompt string          `json:"system_prompt,omitempty"`
	MaxTokens    int             `json:"max_tokens,omitempty"` // 0: the host's default
	Temperature  *float64        `json:"temperature,omitempty"`
	Stop         []string        `json:"stop,omitempty"`
}

// SampleMessage is one message of a sampling request: role "user" or
// "assistant".
type SampleMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ClientSampleReply is the client model's answer.
type ClientSampleReply struct {
	Role       string `json:"role"`
	Text       string `json:"text"`
	Model      string `json:"model,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
}

// ClientElicitRequest asks the user, through the MCP client, to fill in a
// form (elicitation/create): Message says what for, Schema is a flat JSON
// Schema object whose properties are strings, numbers, integers, booleans
// or arrays of enumerated strings, with defaults and enums as MCP allows
// (SEP-1034, SEP-1330).
type ClientElicitRequest struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
}

// ClientElicitReply is the user's answer: Action is accept, decline or
// cancel; Content, with accept, the form's values (checked against the
// schema, its defaults applied).
type ClientElicitReply struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}
