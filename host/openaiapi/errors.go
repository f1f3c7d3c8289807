package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/toolshed/toolshed/host"
)

// failure is how an error reaches an OpenAI client: the status, the error
// object, and the headers that steer the SDKs' own retries.
type failure struct {
	status int
	err    Error
	// retryAfter is sent as Retry-After (whole seconds, rounded up).
	retryAfter time.Duration
	// final sends x-should-retry: false, which the OpenAI SDKs obey: the
	// server has retried already, or trying again cannot help.
	final bool
}

func (f failure) write(w http.ResponseWriter) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.retryAfter.Seconds()))))
	}
	if f.final {
		w.Header().Set("X-Should-Retry", "false")
	}
	WriteError(w, f.status, f.err)
}

// completionFailure maps an agent error to what the client gets. The
// message says what happened without the server's internals (upstream
// address, Go errors): those are in the log under the request id.
func completionFailure(err error) failure {
	var re *host.RequestError
	var me *host.ModelError
	switch {
	case errors.As(err, &re):
		return failure{status: http.StatusBadRequest, final: true,
			err: Error{Type: "invalid_request_error", Param: re.Param, Message: re.Message}}
	case errors.As(err, &me):
		return modelFailure(me)
	case errors.Is(err, context.DeadlineExceeded):
		return failure{status: http.StatusGatewayTimeout, final: true, err: Error{Type: "timeout", Code: "request_timeout",
			Message: "the request did not finish within server.request_timeout"}}
	case errors.Is(err, context.Canceled):
		return failure{status: 499, final: true, err: Error{Type: "invalid_request_error", Code: "cancelled", Message: "the request was cancelled"}}
	}
	return failure{status: http.StatusInternalServerError, err: Error{Type: "server_error",
		Message: "the server failed; the log has the details under this response's x-request-id"}}
}

// modelFailure passes the upstream's answer through: a 429 with its
// Retry-After, another 4xx as it is (with its type, code and param), a
// 5xx or no answer as a 502, a timeout as a 504. Whatever the server has
// retried itself (Attempts > 1) carries x-should-retry: false, so the
// SDKs' own retries never multiply the upstream calls.
func modelFailure(me *host.ModelError) failure {
	after := ""
	if me.Attempts > 1 {
		after = fmt.Sprintf(" (after %d attempts)", me.Attempts)
	}
	typ := me.Type
	if typ == "" {
		typ = "invalid_request_error"
	}
	switch {
	case me.Timeout:
		return failure{status: http.StatusGatewayTimeout, final: true, err: Error{Type: "timeout", Code: "upstream_timeout",
			Message: "the upstream model did not answer in time (model.timeout, within server.request_timeout)"}}
	case me.Status == http.StatusTooManyRequests:
		code := me.Code
		if code == "" {
			code = "rate_limit_exceeded"
		}
		if me.Type == "" {
			typ = "rate_limit_error"
		}
		// Retried here already: the client must not multiply the calls
		// (each SDK attempt would be Retries+1 upstream calls). Not
		// retried (a Retry-After over model.max_retry_wait): the client
		// waits it out.
		return failure{status: me.Status, retryAfter: me.RetryAfter, final: me.Attempts > 1, err: Error{Type: typ, Code: code, Param: me.Param,
			Message: "the upstream model is rate limited" + after + ": " + me.Message}}
	case me.Status == http.StatusUnauthorized || me.Status == http.StatusForbidden:
		// The upstream refused the server's key: its message may show part of it.
		return failure{status: me.Status, final: true, err: Error{Type: typ, Code: me.Code,
			Message: fmt.Sprintf("the upstream model refused the server's credentials (HTTP %d): check model.api_key", me.Status)}}
	case me.Status >= 400 && me.Status < 500:
		return failure{status: me.Status, final: me.Attempts > 1 || (me.Status != 408 && me.Status != 409),
			err: Error{Type: typ, Code: me.Code, Param: me.Param, Message: "the upstream model refused the request" + after + ": " + me.Message}}
	case me.Status != 0:
		return failure{status: http.StatusBadGateway, final: me.Attempts > 1, err: Error{Type: "server_error", Code: "upstream_error",
			Message: fmt.Sprintf("the upstream model failed with HTTP %d%s", me.Status, after)}}
	}
	return failure{status: http.StatusBadGateway, final: me.Attempts > 1, err: Error{Type: "server_error", Code: "upstream_unreachable",
		Message: "the upstream model could not be reached, or its answer broke off" + after}}
}

// upstreamFailure is modelFailure for the go-openai client's errors (the
// model list).
func upstreamFailure(err error) failure {
	var api *openai.APIError
	if errors.As(err, &api) {
		code, _ := api.Code.(string)
		return modelFailure(&host.ModelError{Status: api.HTTPStatusCode, Type: api.Type, Code: code, Message: api.Message, Attempts: 1})
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return modelFailure(&host.ModelError{Status: re.HTTPStatusCode, Attempts: 1})
	}
	return modelFailure(&host.ModelError{Timeout: errors.Is(err, context.DeadlineExceeded), Err: err, Attempts: 1})
}

// bodyError says what is wrong with a request body that does not decode,
// in JSON's words rather than Go's.
func bodyError(err error) Error {
	return decodeError(err, "a chat completion request", "https://platform.openai.com/docs/api-reference/chat/create")
}

// decodeError is bodyError for a body that should have been what, whose
// reference is at docs.
func decodeError(err error, what, docs string) Error {
	prefix := "the body is not " + what + ": "
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return Error{Type: "invalid_request_error", Message: fmt.Sprintf("%sinvalid JSON at byte %d (%s)", prefix, se.Offset, se.Error())}
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return Error{Type: "invalid_request_error", Param: te.Field,
			Message: fmt.Sprintf("%s%s must be %s, not a JSON %s", prefix, field, jsonKind(te.Type), te.Value)}
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return Error{Type: "invalid_request_error", Param: fe.param, Message: prefix + fe.msg}
	}
	return Error{Type: "invalid_request_error", Message: prefix + "see " + docs}
}

// fieldError is a field a decoder of its own refused.
type fieldError struct{ param, msg string }

func (e *fieldError) Error() string { return e.param + ": " + e.msg }

// jsonKind names a Go type as JSON would.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Interface:
		return "a value"
	}
	return "a number"
}
