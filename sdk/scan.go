package sdk

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// A JSON scanner for the hot path of a call: the ABI envelope and the
// arguments. It validates exactly as encoding/json's syntax check does
// (RFC 8259: no control characters in strings, escapes checked, number
// grammar, nesting), but it does not decode; callers fall back to
// encoding/json whenever anything is not plain (see decode.go).
//
// Why by hand: under wazero's WithCloseOnContextDone every taken branch
// back to a WebAssembly loop header exits to the host to check the
// deadline, and Go compiled to WebAssembly turns every jump into one. The
// cost of guest code is therefore counted in jumps, and encoding/json's
// byte-at-a-time state machine (an indirect call per byte, twice over,
// because Unmarshal validates before it decodes) is the bulk of a small
// call. String bodies here are scanned eight bytes per iteration.

// maxDepth bounds nesting; deeper input is left to encoding/json.
const maxDepth = 512

type scanner struct {
	b     []byte
	text  string // b as a string, when decoding strings out of it
	i     int
	depth int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// hasPrefix reports whether the input at s.i starts with lit.
func (s *scanner) hasPrefix(lit string) bool {
	return len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit
}

// peek returns the next byte after whitespace, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// eat consumes c after whitespace.
func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

const (
	lo8  = 0x0101010101010101
	hi8  = 0x8080808080808080
	quo8 = lo8 * '"'
	bsl8 = lo8 * '\\'
)

// special returns, for eight bytes read little-endian, a word whose high
// bit is set in each byte that is '"', '\\', a control character or not
// ASCII. (The classic "has zero byte" test: it never misses a hit, and it
// may flag bytes above the first real hit but never below it, so the
// lowest flagged byte is exact.)
func special(x uint64) uint64 { return escapes(x) | x&hi8 }

// escapes is special without the non-ASCII bytes: the bytes a JSON string
// must escape.
func escapes(x uint64) uint64 {
	q := x ^ quo8
	e := x ^ bsl8
	return ((q - lo8) &^ q) | ((e - lo8) &^ e) | ((x - lo8*0x20) &^ x)
}

// str scans a string at s.i (which holds '"'). It returns the bytes between
// the quotes; esc says whether there was an escape, wide whether there was
// a byte ≥ 0x80. ok is false for invalid JSON.
func (s *scanner) str() (body []byte, esc, wide, ok bool) {
	b := s.b
	i := s.i + 1
	start := i
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])) & hi8; m != 0 {
				// The lowest flagged byte is a real hit.
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return nil, false, false, false
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], esc, wide, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return nil, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return nil, false, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, false, false
					}
				}
				i += 6
			default:
				return nil, false, false, false
			}
		case c < 0x20:
			return nil, false, false, false
		default:
			if c >= 0x80 {
				wide = true
			}
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// num scans a number at s.i and returns its literal.
func (s *scanner) num() ([]byte, bool) {
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return b[start:i], true
}

// lit consumes the literal word (true, false, null) at s.i.
func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// skip scans one value of any kind, checking its syntax.
func (s *scanner) skip() bool {
	switch c := s.peek(); c {
	case '"':
		_, _, _, ok := s.str()
		return ok
	case '{':
		if s.depth++; s.depth > maxDepth {
			return false
		}
		s.i++
		if !s.eat('}') {
			for {
				if s.peek() != '"' {
					return false
				}
				if _, _, _, ok := s.str(); !ok || !s.eat(':') || !s.skip() {
					return false
				}
				if s.eat('}') {
					break
				}
				if !s.eat(',') {
					return false
				}
			}
		}
		s.depth--
		return true
	case '[':
		if s.depth++; s.depth > maxDepth {
			return false
		}
		s.i++
		if !s.eat(']') {
			for {
				if !s.skip() {
					return false
				}
				if s.eat(']') {
					break
				}
				if !s.eat(',') {
					return false
				}
			}
		}
		s.depth--
		return true
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, ok := s.num()
		return ok
	}
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// splitRequest takes the envelope apart without scanning the arguments
// when it has the form the Toolshed host writes, {"tool":"NAME","arguments":
// VALUE}: the arguments are then checked once, by their decoder (a bad
// value is reported as invalid arguments). Any other form goes through
// parseRequest.
func splitRequest(b []byte) (tool, args []byte, ok bool) {
	const head, mid = `{"tool":"`, `","arguments":`
	if !bytes.HasPrefix(b, []byte(head)) {
		return parseRequest(b)
	}
	rest := b[len(head):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || !bytes.HasPrefix(rest[end:], []byte(mid)) {
		return parseRequest(b)
	}
	tool = rest[:end]
	for _, c := range tool {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return parseRequest(b)
		}
	}
	args = bytes.TrimRight(rest[end+len(mid):], " \t\r\n")
	if len(args) < 2 || args[len(args)-1] != '}' {
		return parseRequest(b)
	}
	args = bytes.TrimSpace(args[:len(args)-1])
	if len(args) == 0 {
		return parseRequest(b)
	}
	return tool, args, true
}

// parseRequest reads the ABI request envelope {"tool": …, "arguments": …}
// without encoding/json. ok is false when the request is not plain (an
// escape in a key or the tool name, a duplicate or unknown key, invalid
// JSON): the caller then decodes it with encoding/json, which also words
// the error.
func parseRequest(b []byte) (tool, args []byte, ok bool) {
	s := scanner{b: b}
	if !s.eat('{') {
		return nil, nil, false
	}
	var haveTool, haveArgs bool
	if s.eat('}') {
		return nil, nil, s.end()
	}
	for {
		if s.peek() != '"' {
			return nil, nil, false
		}
		key, esc, _, ok := s.str()
		if !ok || esc || !s.eat(':') {
			return nil, nil, false
		}
		switch string(key) {
		case "tool":
			if haveTool || s.peek() != '"' {
				return nil, nil, false
			}
			name, esc, wide, ok := s.str()
			if !ok || esc || wide && !utf8.Valid(name) {
				return nil, nil, false
			}
			tool, haveTool = name, true
		case "arguments":
			if haveArgs {
				return nil, nil, false
			}
			s.ws()
			start := s.i
			if !s.skip() {
				return nil, nil, false
			}
			args, haveArgs = b[start:s.i], true
		default:
			return nil, nil, false
		}
		if s.eat('}') {
			break
		}
		if !s.eat(',') {
			return nil, nil, false
		}
	}
	if !s.end() {
		return nil, nil, false
	}
	return tool, args, true
}
