package sdk

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// A fast decoder for handlers' argument types, used before encoding/json.
//
// Handle builds a plan for the argument type once, at registration (which
// runs in the module's initialiser, before any request). A plan covers
// structs of exported, untagged-or-simply-tagged fields of kinds string,
// bool, integers, floats, slices and structs of these. decodeFast either
// produces exactly what encoding/json.Unmarshal would, or reports that it
// cannot, and the caller runs encoding/json (which then also words any
// error). It cannot when: the type has anything else (pointers, maps,
// interfaces, embedded structs, ",string", json.Number, custom
// unmarshalers); the input
// has an escape or invalid UTF-8 in a string, a key that matches a field
// only case-insensitively, a key twice, a type mismatch, a number that
// does not fit; or the input is not valid JSON. FuzzDecodeFast checks the
// equivalence.

type planKind uint8

const (
	pString planKind = iota
	pBool
	pInt
	pUint
	pFloat
	pStrings // a slice whose element is a string kind: built without reflect
	pSlice
	pStruct
)

type plan struct {
	kind   planKind
	typ    reflect.Type
	bits   int     // integer and float sizes
	elem   *plan   // slices
	fields []field // structs, in declaration order
}

type field struct {
	name      string
	key       string // `"name":`
	offset    uintptr
	plan      *plan
	omitEmpty bool // encoding only
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumber      = reflect.TypeFor[json.Number]()
)

// planFor returns the plan of the argument type t, or nil when t is not
// covered (encoding/json is used then).
func planFor(t reflect.Type) *plan {
	if t.Kind() != reflect.Struct {
		return nil
	}
	return buildPlan(t, 0)
}

func buildPlan(t reflect.Type, depth int) *plan {
	if depth > 16 {
		return nil // recursive or absurdly deep types: encoding/json
	}
	if pt := reflect.PointerTo(t); hasMethods(t) && (pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)) || t == jsonNumber {
		return nil
	}
	p := &plan{typ: t}
	switch t.Kind() {
	case reflect.String:
		p.kind = pString
	case reflect.Bool:
		p.kind = pBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind, p.bits = pInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.kind, p.bits = pUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		p.kind, p.bits = pFloat, t.Bits()
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is base64 in encoding/json
		}
		if p.elem = buildPlan(t.Elem(), depth+1); p.elem == nil {
			return nil
		}
		p.kind = pSlice
		if p.elem.kind == pString {
			p.kind = pStrings
		}
	case reflect.Struct:
		p.kind = pStruct
		seen := map[string]bool{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				return nil
			}
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if tag, ok := f.Tag.Lookup("json"); ok {
				if tag == "-" {
					continue
				}
				n, opts, _ := strings.Cut(tag, ",")
				for o := range strings.SplitSeq(opts, ",") {
					if o != "" && o != "omitempty" && o != "omitzero" {
						return nil // ",string" and options to come
					}
				}
				if n != "" {
					name = n
				}
			}
			if !plainName(name) || seen[strings.ToLower(name)] {
				return nil // rare names and near-duplicates: encoding/json's rules
			}
			seen[strings.ToLower(name)] = true
			fp := buildPlan(f.Type, depth+1)
			if fp == nil {
				return nil
			}
			p.fields = append(p.fields, field{name: name, key: `"` + name + `":`, offset: f.Offset, plan: fp})
		}
		if len(p.fields) > 64 {
			return nil
		}
	default:
		return nil
	}
	return p
}

// hasMethods reports whether T or *T has exported methods (only then can
// it implement a marshaler); cheaper than Implements, which matters when
// a plan is built inside a call.
func hasMethods(t reflect.Type) bool { return reflect.PointerTo(t).NumMethod() > 0 }

// plainName: ASCII letters, digits, '_' and '-' only.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeFast decodes raw into the value at ptr (of plan p's type, zero) and
// reports whether it could. On false the value may be partly written: the
// caller zeroes it before using encoding/json.
//
// The decoded strings are substrings of raw (a string without escapes is
// one), so raw must never be written again: dispatch passes a keepBytes
// copy of the arguments.
func decodeFast(p *plan, raw []byte, ptr unsafe.Pointer) bool {
	s := scanner{b: raw, text: unsafe.String(unsafe.SliceData(raw), len(raw))}
	return s.value(p, ptr) && s.end()
}

// value decodes one value into ptr; null leaves it as it is, which for a
// fresh zero value is what encoding/json does. Each kind has its own
// function: in Go's WebAssembly every taken branch goes back through its
// function's dispatch loop, so small functions branch for less.
func (s *scanner) value(p *plan, ptr unsafe.Pointer) bool {
	c := s.peek()
	if c == 'n' {
		return s.lit("null")
	}
	switch p.kind {
	case pString:
		return s.stringValue(p, ptr, c)
	case pBool:
		return s.boolValue(p, ptr, c)
	case pInt:
		return s.intValue(p, ptr, c)
	case pUint:
		return s.uintValue(p, ptr, c)
	case pFloat:
		return s.floatValue(p, ptr, c)
	case pStrings:
		return s.stringsValue(p, ptr, c)
	case pSlice:
		return s.sliceValue(p, ptr, c)
	case pStruct:
		return s.structValue(p, ptr, c)
	}
	return false
}

func (s *scanner) stringValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	if c != '"' {
		return false
	}
	start := s.i + 1
	body, esc, wide, ok := s.str()
	if !ok || esc || wide && !utf8.Valid(body) {
		return false
	}
	*(*string)(ptr) = s.text[start : start+len(body)]
	return true
}

func (s *scanner) boolValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	switch {
	case s.lit("true"):
		*(*bool)(ptr) = true
	case s.lit("false"):
		*(*bool)(ptr) = false
	default:
		return false
	}
	return true
}

func (s *scanner) intValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	lit, ok := s.numText()
	if !ok {
		return false
	}
	n, ok := smallInt(lit, p.bits)
	if !ok {
		var err error
		if n, err = strconv.ParseInt(lit, 10, p.bits); err != nil {
			return false
		}
	}
	switch p.bits {
	case 8:
		*(*int8)(ptr) = int8(n)
	case 16:
		*(*int16)(ptr) = int16(n)
	case 32:
		*(*int32)(ptr) = int32(n)
	default:
		*(*int64)(ptr) = n
	}
	return true
}

func (s *scanner) uintValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	lit, ok := s.numText()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(lit, 10, p.bits)
	if err != nil {
		return false
	}
	switch p.bits {
	case 8:
		*(*uint8)(ptr) = uint8(n)
	case 16:
		*(*uint16)(ptr) = uint16(n)
	case 32:
		*(*uint32)(ptr) = uint32(n)
	default:
		*(*uint64)(ptr) = n
	}
	return true
}

func (s *scanner) floatValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	lit, ok := s.numText()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(lit, p.bits)
	if err != nil {
		return false
	}
	if p.bits == 32 {
		*(*float32)(ptr) = float32(f)
	} else {
		*(*float64)(ptr) = f
	}
	return true
}

func (s *scanner) stringsValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	if c != '[' {
		return false
	}
	s.i++
	var buf [16]string // on the stack: one allocation for the result
	out := buf[:0]
	if !s.eat(']') {
		for {
			if s.peek() != '"' {
				return false
			}
			start := s.i + 1
			body, esc, wide, ok := s.str()
			if !ok || esc || wide && !utf8.Valid(body) {
				return false
			}
			out = append(out, s.text[start:start+len(body)])
			if s.eat(']') {
				break
			}
			if !s.eat(',') {
				return false
			}
		}
	}
	// The same layout for any slice of a string kind.
	*(*[]string)(ptr) = keepStrings(out)
	return true
}

func (s *scanner) sliceValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	if c != '[' {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++
	v := reflect.NewAt(p.typ, ptr).Elem()
	v.Set(reflect.MakeSlice(p.typ, 0, 4))
	if !s.eat(']') {
		for n := 0; ; n++ {
			v.Grow(1)
			v.SetLen(n + 1)
			if !s.value(p.elem, v.Index(n).Addr().UnsafePointer()) {
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
}

func (s *scanner) structValue(p *plan, ptr unsafe.Pointer, c byte) bool {
	if c != '{' {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++
	var seen uint64
	next := 0 // the field whose key is likely next: declaration order
	if !s.eat('}') {
		for {
			var i int
			if next < len(p.fields) && s.hasPrefix(p.fields[next].key) {
				// The key as encoding/json writes it, compact: found
				// with one comparison.
				i = next
				s.i += len(p.fields[next].key)
			} else {
				if s.peek() != '"' {
					return false
				}
				key, esc, wide, ok := s.str()
				if !ok || esc || wide || !s.eat(':') {
					return false
				}
				i = p.field(key)
			}
			switch {
			case i >= 0:
				if seen&(1<<i) != 0 {
					return false // a key twice: encoding/json merges
				}
				seen |= 1 << i
				next = i + 1
				f := &p.fields[i]
				if !s.value(f.plan, unsafe.Add(ptr, f.offset)) {
					return false
				}
			case i == foldMatch:
				return false
			default:
				if !s.skip() {
					return false
				}
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
}

// smallInt converts a literal of at most 18 digits with an optional '-'
// and nothing else, as strconv.ParseInt would; ok is false for anything
// else (strconv.ParseInt decides then).
func smallInt(lit string, size int) (int64, bool) {
	neg := len(lit) > 0 && lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if size < 64 { // 18 digits always fit 64 bits
		if lim := int64(1) << (size - 1); n < -lim || n > lim-1 {
			return 0, false
		}
	}
	return n, true
}

// numText scans a number and returns its literal out of s.text (no
// allocation).
func (s *scanner) numText() (string, bool) {
	start := s.i
	lit, ok := s.num()
	return s.text[start : start+len(lit)], ok
}

const (
	noMatch   = -1
	foldMatch = -2
)

// field returns the index of the field named key, foldMatch when a field
// matches only case-insensitively (encoding/json's rule, left to it), or
// noMatch.
func (p *plan) field(key []byte) int {
	for i := range p.fields {
		if p.fields[i].name == string(key) {
			return i
		}
	}
	for i := range p.fields {
		if strings.EqualFold(p.fields[i].name, string(key)) {
			return foldMatch
		}
	}
	return noMatch
}
