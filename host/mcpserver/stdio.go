package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunStdio serves one session over r and w (the client that started this
// process) until the client closes r or ctx ends. Only MCP is written to
// w: one JSON-RPC message a line.
//
// A line that is not a JSON-RPC 2.0 message gets an error response
// (-32700 bad JSON, -32600 anything else: a batch, another jsonrpc
// version, an id that is not a string or number, a line over
// MaxBodyBytes) and the session goes on. A call the client cancelled
// (notifications/cancelled) gets no response.
func (s *Server) RunStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	end := s.opts.Metrics.SessionStarted("mcp")
	ms := s.newSession("", end) // one client, one tenant
	defer ms.close()
	err := ms.srv.Run(ctx, &stdioTransport{r: r, w: w, max: s.opts.MaxBodyBytes})
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil
	}
	return err
}

// stdioTransport is newline-delimited JSON-RPC, as the SDK's IOTransport,
// except that a bad line is answered instead of ending the connection
// (the IOTransport's Read fails, which closes the session).
type stdioTransport struct {
	r   io.Reader
	w   io.Writer
	max int64
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.w, lines: make(chan lineOrErr), closed: make(chan struct{}), cancelled: map[string]bool{}}
	go c.readLines(t.r, t.max)
	return c, nil
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

// stdioConn is safe for concurrent use: Write takes wmu; Read is called
// by one goroutine (the SDK's reader).
type stdioConn struct {
	w         io.Writer
	lines     chan lineOrErr
	closed    chan struct{}
	closeOnce sync.Once

	wmu       sync.Mutex
	cancelled map[string]bool // ids of calls the client cancelled, not yet answered
}

// readLines feeds lines to Read; a line over max is reported as too long
// (and skipped to its end) rather than buffered.
func (c *stdioConn) readLines(r io.Reader, max int64) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var buf []byte
		tooLong := false
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			if !tooLong {
				if int64(len(buf)+len(part)) > max {
					tooLong, buf = true, nil
				} else {
					buf = append(buf, part...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if len(bytes.TrimSpace(buf)) > 0 || tooLong {
			select {
			case c.lines <- lineOrErr{line: buf, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.lines <- lineOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		if l.tooLong {
			c.writeError(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "message longer than the server's limit (MaxBodyBytes)")
			continue
		}
		msg, code, reason, id := checkLine(l.line)
		if msg == nil {
			c.writeError(id, code, reason)
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
					c.wmu.Lock()
					c.cancelled[idString(id)] = true
					c.wmu.Unlock()
				}
			}
		}
		return msg, nil
	}
}

// checkLine decodes one line, or says why it is not a JSON-RPC 2.0
// message: the error code, the reason, and the id when it has a usable
// one.
func checkLine(line []byte) (jsonrpc.Message, int64, string, jsonrpc.ID) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "parse error: the line is not JSON", jsonrpc.ID{}
	}
	switch line[0] {
	case '[':
		return nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP 2025-06-18 and later)", jsonrpc.ID{}
	case '{':
	default:
		return nil, jsonrpc.CodeInvalidRequest, "a JSON-RPC message is a JSON object", jsonrpc.ID{}
	}
	var env struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: " + oneLine(err.Error()), jsonrpc.ID{}
	}
	var id jsonrpc.ID
	if len(env.ID) > 0 {
		var v any
		dec := json.NewDecoder(bytes.NewReader(env.ID))
		dec.UseNumber()
		dec.Decode(&v)
		switch v := v.(type) {
		case string:
			id, _ = jsonrpc.MakeID(v)
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or an integer", jsonrpc.ID{}
			}
			id, _ = jsonrpc.MakeID(float64(n))
		default:
			return nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or an integer", jsonrpc.ID{}
		}
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return nil, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`, id
	}
	if len(env.Method) > 0 && env.Method[0] != '"' {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: the method must be a string", id
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: " + oneLine(err.Error()), id
	}
	return msg, 0, "", id
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if k := idString(resp.ID); c.cancelled[k] {
			delete(c.cancelled, k) // the client cancelled it: no response
			return nil
		}
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

func (c *stdioConn) writeError(id jsonrpc.ID, code int64, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id.Raw(), "error": map[string]any{"code": code, "message": msg}})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(append(b, '\n'))
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

var _ mcp.Transport = (*stdioTransport)(nil)
