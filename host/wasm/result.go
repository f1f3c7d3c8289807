package wasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/toolshed/toolshed/sdk/abi"
)

// decodeResult reads an ABI result as encoding/json does with unknown
// fields disallowed and nothing after the object. The result is a copy:
// nothing in it points into raw (guest memory).
//
// A result with "structured" and without a "content" key (absent, not
// null or "") gets the structured JSON text, byte for byte as the module
// wrote it, as its content: the model reads it (docs/ABI.md), and the
// module need not escape the same JSON a second time as a string.
//
// The common form, {"content":"…","structured":…,"is_error":…} with each
// key once, exactly spelt and without escapes, is read by hand; anything
// else (another key or spelling, a duplicate, a \u escape, invalid UTF-8,
// invalid JSON, trailing bytes) goes to encoding/json, which then decides,
// so that both paths accept and reject exactly the same results.
func decodeResult(raw []byte) (abi.Result, error) {
	if res, ok := fastResult(raw); ok {
		return res, nil
	}
	var res abi.Result
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return abi.Result{}, fmt.Errorf("result is not a valid ABI result: %v", err)
	}
	// (Decoder.More would let a stray '}' or ']' through.)
	if len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) > 0 {
		return abi.Result{}, errors.New("result is not a valid ABI result: data after the JSON object")
	}
	res.Content = string([]byte(res.Content))
	res.Structured = append(json.RawMessage(nil), res.Structured...)
	if len(res.Structured) == 0 {
		res.Structured = nil
	}
	if res.Structured != nil && res.Content == "" && !hasContentKey(raw) {
		res.Content = string(res.Structured)
	}
	return res, nil
}

// hasContentKey reports whether a result encoding/json has accepted has a
// key it matched to "content" (it matches keys case-insensitively), with
// any value, null included.
func hasContentKey(raw []byte) bool {
	var probe struct {
		Content json.RawMessage `json:"content"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.Content != nil
}

// resultScanner checks and takes apart JSON text; each method reports
// false for anything it is not sure of. The arguments' decoder shares its
// cursor, whitespace, literal and number scanning.
type resultScanner struct {
	b []byte
	i int
}

func (s *resultScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// eat consumes c after whitespace.
func (s *resultScanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func fastResult(raw []byte) (res abi.Result, ok bool) {
	s := resultScanner{b: raw}
	if !s.eat('{') {
		return res, false
	}
	var seen [3]bool
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.plainString()
			if !ok || !s.eat(':') {
				return res, false
			}
			s.ws()
			switch string(key) {
			case "content":
				if seen[0] {
					return res, false
				}
				seen[0] = true
				if res.Content, ok = s.stringValue(); !ok {
					return res, false
				}
			case "structured":
				if seen[1] {
					return res, false
				}
				seen[1] = true
				start := s.i
				if !s.skip(0) {
					return res, false
				}
				res.Structured = append(json.RawMessage(nil), raw[start:s.i]...)
			case "is_error":
				if seen[2] {
					return res, false
				}
				seen[2] = true
				switch {
				case bytes.HasPrefix(raw[s.i:], []byte("true")):
					res.IsError, s.i = true, s.i+4
				case bytes.HasPrefix(raw[s.i:], []byte("false")):
					s.i += 5
				default:
					return res, false
				}
			default:
				return res, false
			}
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return res, false
			}
		}
	}
	s.ws()
	if s.i != len(raw) {
		return res, false
	}
	if seen[1] && !seen[0] { // content from structured: see decodeResult
		res.Content = string(res.Structured)
	}
	return res, true
}

// plainString reads a string without escapes, control or non-ASCII bytes.
func (s *resultScanner) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// stringValue decodes a string with the escapes other than \u, in valid
// UTF-8.
func (s *resultScanner) stringValue() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	i := s.i + 1
	var out []byte
	start, wide := i, false
	for ; i < len(s.b); i++ {
		c := s.b[i]
		switch {
		case c == '"':
			full := s.b[start:i]
			if out != nil {
				full = append(out, full...)
			}
			if wide && !utf8.Valid(full) { // encoding/json would replace bytes
				return "", false
			}
			s.i = i + 1
			return string(full), true
		case c == '\\':
			if i+1 >= len(s.b) {
				return "", false
			}
			var r byte
			switch s.b[i+1] {
			case '"', '\\', '/':
				r = s.b[i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default: // \u and invalid escapes
				return "", false
			}
			out = append(append(out, s.b[start:i]...), r)
			i++
			start = i + 1
		case c < 0x20:
			return "", false
		case c >= 0x80:
			wide = true
		}
	}
	return "", false
}

// skip checks one JSON value of any kind (as encoding/json's scanner
// does: strings are not checked for UTF-8) and moves past it.
func (s *resultScanner) skip(depth int) bool {
	if depth > 100 {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if !s.skipString() || !s.eat(':') || !s.skip(depth+1) {
				return false
			}
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == '[':
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == '"':
		return s.skipString()
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	default:
		return s.number()
	}
}

func (s *resultScanner) word(w string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

func (s *resultScanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(s.b) {
				return false
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(s.b) {
					return false
				}
				for _, h := range s.b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

func (s *resultScanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *resultScanner) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}
