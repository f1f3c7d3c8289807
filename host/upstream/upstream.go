// Package upstream is the model client: it calls an OpenAI-compatible
// chat completions endpoint, plain or streamed, with a retry policy
// (which failures are tried again, how long to wait, when to give up),
// and turns every failure into an *Error that says what the upstream
// answered (status, error object, Retry-After) or that it did not.
//
// A Client talks to an Endpoint over HTTP itself (server-sent events read
// here) or through a go-openai client. host runs its rounds with one;
// front ends map its *Error to their own answers.
package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Client makes model calls with a retry policy. It is safe for concurrent
// use; its fields must not change once calls are made.
type Client struct {
	// Endpoint, when set, is called over HTTP; otherwise OpenAI is.
	Endpoint *Endpoint
	OpenAI   *openai.Client
	// Retries is how many times a call is retried after a 408, 409, 429,
	// a 5xx or a network failure (0 or negative: none), waiting Backoff,
	// doubled each time up to 8s, or the upstream's Retry-After when
	// longer. A Retry-After over MaxRetryWait, or one that would pass the
	// request's deadline, is not waited out here: the call fails at once
	// with it, for the caller's client to wait. A call that times out is
	// not retried.
	Retries      int
	Backoff      time.Duration
	MaxRetryWait time.Duration
	// RequestTimeout bounds one attempt (and each silence of a stream).
	RequestTimeout time.Duration
	// Logger gets a warning per retry; nil discards.
	Logger *slog.Logger
}

func (c *Client) log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// oneLine folds white space, for messages in one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Endpoint is an OpenAI-compatible chat completions endpoint the client
// calls over HTTP itself: it sees the status codes and Retry-After, and
// sends a selection call's temperature 0, which go-openai drops. The zero
// HTTPClient is a plain one; deadlines come from the request's context.
// An Endpoint is safe for concurrent use.
type Endpoint struct {
	BaseURL    string // up to the API version, e.g. https://api.openai.com/v1
	APIKey     string // sent as a bearer token; empty: none
	HTTPClient *http.Client
}

// Error is a model call that failed: what the upstream answered, or
// that it did not. Callers map it to their own answer (an HTTP front end
// passes a 4xx or a 429 through, a 5xx or no answer becomes a 502, a
// timeout a 504); its Error text is for logs: it may name the upstream's
// address.
type Error struct {
	// Status is the upstream's HTTP status; 0 when it gave none.
	Status int
	// RetryAfter is the upstream's Retry-After (or retry-after-ms).
	RetryAfter time.Duration
	// Type, Code, Param and Message are the upstream's error object.
	Type, Code, Param, Message string
	// Timeout: no answer within Client.RequestTimeout or the request's
	// deadline.
	Timeout bool
	// Attempts is how many calls were made.
	Attempts int
	// Err is the cause when the upstream gave no status (a network
	// failure, a broken stream, a deadline).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Timeout:
		b.WriteString("the model did not answer in time")
	case e.Status != 0:
		fmt.Fprintf(&b, "the model answered HTTP %d", e.Status)
		if e.Code != "" {
			fmt.Fprintf(&b, " (%s)", e.Code)
		}
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", oneLine(e.Message))
		}
	default:
		b.WriteString("the model could not be reached")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes a timeout match context.DeadlineExceeded.
func (e *Error) Is(target error) bool { return e.Timeout && target == context.DeadlineExceeded }

// retryable says whether another attempt may help: rate limits, conflicts,
// server errors and network failures, never a timeout (it would take as
// long again) nor another 4xx.
func (e *Error) retryable() bool {
	if e.Timeout {
		return false
	}
	switch {
	case e.Status == 0:
		return true
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusConflict, e.Status == http.StatusTooManyRequests:
		return true
	}
	return e.Status >= 500
}

// modelError makes any failure of a model call a *Error.
func asError(err error) *Error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	var api *openai.APIError
	if errors.As(err, &api) {
		code, _ := api.Code.(string)
		if f, ok := api.Code.(float64); ok {
			code = strconv.FormatFloat(f, 'f', -1, 64)
		}
		param := ""
		if api.Param != nil {
			param = *api.Param
		}
		return &Error{Status: api.HTTPStatusCode, Type: api.Type, Code: code, Param: param, Message: api.Message}
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return &Error{Status: re.HTTPStatusCode, Message: strings.TrimSpace(string(re.Body))}
	}
	return &Error{Err: err, Timeout: errors.Is(err, context.DeadlineExceeded)}
}

// attempt is one model call. It gets a context bounded by
// Client.RequestTimeout and the request's deadline; done, when called
// by the attempt, ends that context (a stream keeps it until read).
type attempt func(ctx context.Context, done context.CancelFunc) error

// call runs a model call with the retry policy of Retries: at most
// Retries+1 attempts, all within ctx's deadline; a timed-out attempt is
// final. The error is a *Error.
func (c *Client) call(ctx context.Context, what string, try attempt) error {
	wait := c.Backoff
	for n := 1; ; n++ {
		actx, cancel := context.WithCancel(ctx)
		timedOut := false
		var tmu sync.Mutex
		timer := time.AfterFunc(c.RequestTimeout, func() {
			tmu.Lock()
			timedOut = true
			tmu.Unlock()
			cancel()
		})
		done := func() { timer.Stop(); cancel() }
		err := try(actx, done)
		if err == nil {
			timer.Stop()
			return nil
		}
		done()
		me := asError(err)
		tmu.Lock()
		switch {
		case timedOut:
			me.Timeout, me.Err = true, fmt.Errorf("no answer within %s (model.timeout): %w", c.RequestTimeout, context.DeadlineExceeded)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			me.Timeout, me.Err = true, fmt.Errorf("the request's deadline passed: %w", context.DeadlineExceeded)
		}
		tmu.Unlock()
		me.Attempts = n
		if ctx.Err() != nil && !me.Timeout {
			me.Err = ctx.Err()
			return me
		}
		delay, ok := c.retryDelay(ctx, me, n, wait)
		if !ok {
			return me
		}
		c.log().Warn("model call failed; retrying", "call", what, "attempt", n, "wait", delay, "error", me)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			me.Err, me.Timeout = ctx.Err(), errors.Is(ctx.Err(), context.DeadlineExceeded)
			return me
		}
		wait = min(2*wait, 8*time.Second)
	}
}

// retryDelay is how long to wait before attempt n+1, and whether to make
// it at all: not after a final failure, not past Retries, not for a
// Retry-After over MaxRetryWait, and not when the wait would end past the
// request's deadline.
func (c *Client) retryDelay(ctx context.Context, me *Error, n int, backoff time.Duration) (time.Duration, bool) {
	if !me.retryable() || n > c.Retries {
		return 0, false
	}
	delay := backoff
	if me.RetryAfter > 0 {
		if me.RetryAfter > c.MaxRetryWait {
			return 0, false
		}
		delay = max(delay, me.RetryAfter)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= delay {
		return 0, false
	}
	return delay, true
}

// Complete makes one plain model call with the retry policy (see call).
// The error is an *Error.
func (c *Client) Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	var out openai.ChatCompletionResponse
	err := c.call(ctx, "complete", func(ctx context.Context, done context.CancelFunc) error {
		defer done() // the answer is read whole
		var err error
		if c.Endpoint != nil {
			out, err = c.Endpoint.complete(ctx, req)
		} else {
			out, err = c.OpenAI.CreateChatCompletion(ctx, req)
		}
		return err
	})
	if err == nil && len(out.Choices) == 0 {
		err = &Error{Attempts: 1, Err: errors.New("the answer has no choice")}
	}
	return out, err
}

// chunks is a stream of chat completion chunks (go-openai's stream, or
// the upstream's read here).
type chunks interface {
	Recv() (openai.ChatCompletionStreamResponse, error)
	Close() error
}

// Stream makes one streaming model call and assembles the message: text
// pieces go to onText as they come; tool calls are put together from
// their deltas. A failure before the stream starts is retried like a
// plain call; a stream that breaks off or ends early is an error (not
// retried: text went out). RequestTimeout bounds the wait for the stream
// to start and each silence within it. It returns the message and the
// finish reason; the usage (stream_options.include_usage is always asked)
// goes to onUsage as it comes. The error is an *Error.
func (c *Client) Stream(ctx context.Context, req openai.ChatCompletionRequest, onText func(string), onUsage func(openai.Usage)) (openai.ChatCompletionMessage, openai.FinishReason, error) {
	var finish openai.FinishReason
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	var st chunks
	var stop context.CancelFunc
	err := c.call(ctx, "stream", func(ctx context.Context, done context.CancelFunc) error {
		var err error
		if c.Endpoint != nil {
			st, err = c.Endpoint.stream(ctx, req)
		} else {
			st, err = c.OpenAI.CreateChatCompletionStream(ctx, req)
		}
		stop = done
		return err
	})
	if err != nil {
		return openai.ChatCompletionMessage{}, "", err
	}
	defer stop()
	defer st.Close()
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var text strings.Builder
	var calls []openai.ToolCall
	finished := false
	idle := time.AfterFunc(c.RequestTimeout, stop)
	defer idle.Stop()
	broke := func(err error) (openai.ChatCompletionMessage, openai.FinishReason, error) {
		me := asError(err)
		if me.Status == 0 && me.Err != nil && me.Message == "" {
			me.Err = fmt.Errorf("the stream broke off: %w", me.Err)
		}
		me.Timeout = me.Timeout || ctx.Err() == nil && errors.Is(err, context.Canceled)
		me.Attempts = 1
		return msg, "", me
	}
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return broke(err)
		}
		idle.Reset(c.RequestTimeout)
		if chunk.Usage != nil {
			onUsage(*chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.FinishReason != "" {
				finished, finish = true, ch.FinishReason
			}
			if d := ch.Delta.Content; d != "" {
				text.WriteString(d)
				onText(d)
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := len(calls)
				if tc.Index != nil {
					i = *tc.Index
				} else if tc.ID == "" && len(calls) > 0 {
					i = len(calls) - 1 // a continuation without an index
				}
				if i < 0 || i > 128 {
					return broke(fmt.Errorf("a tool call with index %d", i))
				}
				for len(calls) <= i {
					calls = append(calls, openai.ToolCall{Type: openai.ToolTypeFunction})
				}
				c := &calls[i]
				if tc.ID != "" {
					c.ID = tc.ID
				}
				if tc.Function.Name != "" {
					c.Function.Name += tc.Function.Name
				}
				c.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if !finished {
		return broke(errors.New("the stream ended before the answer was finished"))
	}
	msg.Content = text.String()
	msg.ToolCalls = calls
	return msg, finish, nil
}

// wireRequest is a chat completion request as sent upstream: go-openai
// omits a zero temperature, which a selection request (one without
// tools: every agent round carries tool_search) must send.
type wireRequest struct {
	openai.ChatCompletionRequest
	Temperature *float32 `json:"temperature,omitempty"`
}

// post sends a chat completion request; a status other than 2xx is a
// *Error with the upstream's error object and Retry-After.
func (u *Endpoint) post(ctx context.Context, req openai.ChatCompletionRequest) (*http.Response, error) {
	w := wireRequest{ChatCompletionRequest: req}
	if req.Temperature != 0 || len(req.Tools) == 0 {
		w.Temperature = &req.Temperature
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(u.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	if u.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+u.APIKey)
	}
	c := u.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	me := &Error{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		me.Message, me.Type = e.Error.Message, e.Error.Type
		me.Param, me.Code = scalar(e.Error.Param), scalar(e.Error.Code)
	} else {
		me.Message = strings.TrimSpace(string(b))
	}
	return nil, me
}

// scalar is a JSON string or number as text ("" for anything else).
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// retryAfter reads retry-after-ms, else Retry-After (seconds or a date).
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func (u *Endpoint) complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	var out openai.ChatCompletionResponse
	resp, err := u.post(ctx, req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("reading the answer: %w", err)
	}
	return out, nil
}

func (u *Endpoint) stream(ctx context.Context, req openai.ChatCompletionRequest) (chunks, error) {
	resp, err := u.post(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sseChunks{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
}

// sseChunks reads chat completion chunks from server-sent events: data
// lines, to [DONE]; an event with an error object is a *Error.
type sseChunks struct {
	body io.ReadCloser
	r    *bufio.Reader
}

func (s *sseChunks) Recv() (openai.ChatCompletionStreamResponse, error) {
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // no [DONE]
			}
			return openai.ChatCompletionStreamResponse{}, err
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue // blank lines, comments, other fields
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return openai.ChatCompletionStreamResponse{}, io.EOF
		}
		var c struct {
			openai.ChatCompletionStreamResponse
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			return openai.ChatCompletionStreamResponse{}, fmt.Errorf("a malformed chunk: %w", err)
		}
		if c.Error != nil {
			return openai.ChatCompletionStreamResponse{}, &Error{Type: c.Error.Type, Code: scalar(c.Error.Code), Message: c.Error.Message,
				Err: errors.New("an error event in the stream")}
		}
		return c.ChatCompletionStreamResponse, nil
	}
}

func (s *sseChunks) Close() error { return s.body.Close() }
