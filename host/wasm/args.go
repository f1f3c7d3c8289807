package wasm

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeArgs decodes a call's arguments into the values the schema
// validator takes: exactly what jsonschema.UnmarshalJSON returns
// (encoding/json with UseNumber: map[string]any, []any, string,
// json.Number, bool, nil; the last of duplicate keys wins; escapes and
// invalid UTF-8 decoded as encoding/json does), and an error for exactly
// the texts it refuses.
//
// Text up to maxArgsDepth deep is decoded by hand, without encoding/json's
// reflection; anything the hand decoder is not sure of (deeper nesting,
// invalid JSON) goes to jsonschema.UnmarshalJSON, which then decides, with
// its own error and its bound on nesting (10000 levels). FuzzDecodeArgs
// checks that both agree.
func decodeArgs(raw []byte) (any, error) {
	if v, ok := fastArgs(raw); ok {
		return v, nil
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// maxArgsDepth bounds the hand decoder's recursion; deeper arguments take
// the encoding/json path.
const maxArgsDepth = 64

type argsDecoder struct {
	resultScanner        // the cursor, whitespace, literals and numbers
	s             string // b as a string: plain strings are its substrings
	// stack holds the elements of the arrays being decoded, so that each
	// array is allocated once, at its length.
	stack []any
}

func fastArgs(raw []byte) (any, bool) {
	d := argsDecoder{resultScanner: resultScanner{b: raw}, s: string(raw)}
	d.ws()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.ws()
	return v, d.i == len(raw)
}

// value decodes the value at d.i (no leading whitespace).
func (d *argsDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		if depth >= maxArgsDepth {
			return nil, false
		}
		d.i++
		m := map[string]any{}
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, true
		}
		for {
			k, ok := d.str()
			if !ok {
				return nil, false
			}
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, false
			}
			d.i++
			d.ws()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			d.ws()
			if d.i >= len(d.b) {
				return nil, false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
				d.ws()
			case '}':
				d.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		if depth >= maxArgsDepth {
			return nil, false
		}
		d.i++
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return make([]any, 0), true // not nil, as encoding/json
		}
		base := len(d.stack)
		for {
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			d.stack = append(d.stack, v)
			d.ws()
			if d.i >= len(d.b) {
				return nil, false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
				d.ws()
			case ']':
				d.i++
				a := make([]any, len(d.stack)-base)
				copy(a, d.stack[base:])
				clear(d.stack[base:])
				d.stack = d.stack[:base]
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	default:
		start := d.i
		if !d.number() {
			return nil, false
		}
		return json.Number(d.s[start:d.i]), true
	}
}

// str decodes the string at d.i. Plain ASCII is copied as it is; escapes
// and other bytes are decoded as encoding/json's unquote does.
func (d *argsDecoder) str() (string, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	for i := start; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			return d.s[start:i], true
		case c < 0x20:
			return "", false
		case c == '\\' || c >= utf8.RuneSelf:
			return d.unquote(start, i)
		}
	}
	return "", false
}

// unquote decodes the rest of a string from i, the first byte that is
// not plain ASCII; b[start:i] is plain.
func (d *argsDecoder) unquote(start, i int) (string, bool) {
	s := d.b
	out := make([]byte, 0, i-start+16)
	out = append(out, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch s[i+1] {
			case '"', '\\', '/':
				out = append(out, s[i+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := getu4(s[i:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(s[i:])); dec != unicode.ReplacementChar {
						i += 6
						out = utf8.AppendRune(out, dec)
						continue
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, r) // as encoding/json: U+FFFD
			} else {
				out = append(out, s[i:i+n]...)
			}
			i += n
		}
	}
	return "", false
}

// getu4 reads \uXXXX at the start of s; -1 if it is not there.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// objectOnlySchema reports whether a parameter schema, as
// manifest.CompileSchema compiles it, accepts exactly the JSON objects:
// no parameters at all, or an object schema whose only keywords are
// "type": "object", an empty "properties" and the annotations "title" and
// "description", none of which constrains an object's members.
func objectOnlySchema(params json.RawMessage) bool {
	if len(bytes.TrimSpace(params)) == 0 {
		return true // CompileSchema: {"type":"object","properties":{}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return false
	}
	m, ok := doc.(map[string]any)
	if !ok || m["type"] != "object" {
		return false
	}
	for k, v := range m {
		switch k {
		case "type":
		case "properties":
			if p, ok := v.(map[string]any); !ok || len(p) > 0 {
				return false
			}
		case "title", "description":
			if _, ok := v.(string); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isObjectText reports whether args is valid JSON text whose value is an
// object: then jsonschema.UnmarshalJSON would decode it without error (it
// runs encoding/json's scanner, the one json.Valid runs, with the same
// bound on nesting) to a map[string]any, which an objectOnlySchema
// accepts.
func isObjectText(args []byte) bool {
	i := 0
	for i < len(args) && (args[i] == ' ' || args[i] == '\t' || args[i] == '\n' || args[i] == '\r') {
		i++
	}
	return i < len(args) && args[i] == '{' && json.Valid(args)
}
