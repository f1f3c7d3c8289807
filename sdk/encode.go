package sdk

import (
	"encoding"
	"encoding/json"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// A fast encoder for JSON (the helper): the counterpart of decode.go. For
// structs (or pointers to structs) of the kinds decode.go plans for, it
// writes exactly the bytes encoding/json.Marshal writes (HTML-safe
// escaping, its float format, omitempty); for anything else (maps,
// interfaces, pointers inside, custom marshalers, NaN, invalid field
// names) it reports that it cannot, and json.Marshal does the work.
// FuzzEncodeFast checks the equivalence.

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

	encMu    sync.Mutex
	encPlans = map[reflect.Type]*plan{} // nil: not covered

	lastEncType reflect.Type
	lastEncPlan *plan
)

// encPlanFor returns the encoding plan of a struct type, cached. The last
// type asked for is remembered apart: a tool returns the same type call
// after call, and that check costs less than the map's.
func encPlanFor(t reflect.Type) *plan {
	encMu.Lock()
	if t == lastEncType {
		p := lastEncPlan
		encMu.Unlock()
		return p
	}
	p, ok := encPlans[t]
	if !ok {
		if t.Kind() == reflect.Struct {
			p = buildEnc(t, 0)
		}
		encPlans[t] = p
	}
	lastEncType, lastEncPlan = t, p
	encMu.Unlock()
	return p
}

func buildEnc(t reflect.Type, depth int) *plan {
	if depth > 16 || hasMethods(t) && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) || t == jsonNumber {
		return nil // (*T's method set holds T's)
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
			return nil
		}
		if p.elem = buildEnc(t.Elem(), depth+1); p.elem == nil {
			return nil
		}
		p.kind = pSlice
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
			name, omit := f.Name, false
			if tag, ok := f.Tag.Lookup("json"); ok {
				if tag == "-" {
					continue
				}
				n, opts, _ := strings.Cut(tag, ",")
				for o := range strings.SplitSeq(opts, ",") {
					switch o {
					case "":
					case "omitempty":
						omit = true
					default:
						return nil
					}
				}
				if n != "" {
					name = n
				}
			}
			if !plainName(name) || seen[strings.ToLower(name)] {
				return nil
			}
			seen[strings.ToLower(name)] = true
			fp := buildEnc(f.Type, depth+1)
			if fp == nil {
				return nil
			}
			p.fields = append(p.fields, field{name: name, offset: f.Offset, plan: fp, omitEmpty: omit})
		}
	default:
		return nil
	}
	return p
}

// marshalFast appends v to dst as json.Marshal would encode it, or
// reports that it cannot.
func marshalFast(dst []byte, v any) ([]byte, bool) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, false
	}
	// The interface's data word: a pointer to the struct (a struct of the
	// planned kinds is never pointer-shaped), or the pointer itself.
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	switch t.Kind() {
	case reflect.Struct:
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct {
			return nil, false
		}
		if data == nil {
			return append(dst, "null"...), true
		}
		t = t.Elem()
	default:
		return nil, false
	}
	p := encPlanFor(t)
	if p == nil {
		return nil, false
	}
	return appendValue(dst, p, data)
}

func appendValue(b []byte, p *plan, ptr unsafe.Pointer) ([]byte, bool) {
	switch p.kind {
	case pString:
		return appendHTMLString(b, *(*string)(ptr)), true
	case pBool:
		return strconv.AppendBool(b, *(*bool)(ptr)), true
	case pInt:
		return strconv.AppendInt(b, loadInt(p, ptr), 10), true
	case pUint:
		return strconv.AppendUint(b, loadUint(p, ptr), 10), true
	case pFloat:
		return appendFloat(b, loadFloat(p, ptr), p.bits)
	case pSlice:
		h := (*sliceHeader)(ptr)
		if h.data == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		size := p.elem.typ.Size()
		for i := 0; i < h.len; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, p.elem, unsafe.Add(h.data, uintptr(i)*size)); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	case pStruct:
		b = append(b, '{')
		first := true
		for i := range p.fields {
			f := &p.fields[i]
			fp := unsafe.Add(ptr, f.offset)
			if f.omitEmpty && isEmpty(f.plan, fp) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			var ok bool
			if b, ok = appendValue(b, f.plan, fp); !ok {
				return nil, false
			}
		}
		return append(b, '}'), true
	}
	return nil, false
}

// sliceHeader is the layout of every slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func loadInt(p *plan, ptr unsafe.Pointer) int64 {
	switch p.bits {
	case 8:
		return int64(*(*int8)(ptr))
	case 16:
		return int64(*(*int16)(ptr))
	case 32:
		return int64(*(*int32)(ptr))
	}
	return *(*int64)(ptr)
}

func loadUint(p *plan, ptr unsafe.Pointer) uint64 {
	switch p.bits {
	case 8:
		return uint64(*(*uint8)(ptr))
	case 16:
		return uint64(*(*uint16)(ptr))
	case 32:
		return uint64(*(*uint32)(ptr))
	}
	return *(*uint64)(ptr)
}

func loadFloat(p *plan, ptr unsafe.Pointer) float64 {
	if p.bits == 32 {
		return float64(*(*float32)(ptr))
	}
	return *(*float64)(ptr)
}

// isEmpty is encoding/json's omitempty test for the planned kinds.
func isEmpty(p *plan, ptr unsafe.Pointer) bool {
	switch p.kind {
	case pString:
		return len(*(*string)(ptr)) == 0
	case pBool:
		return !*(*bool)(ptr)
	case pInt:
		return loadInt(p, ptr) == 0
	case pUint:
		return loadUint(p, ptr) == 0
	case pFloat:
		return loadFloat(p, ptr) == 0
	case pSlice, pStrings:
		return (*sliceHeader)(ptr).len == 0
	}
	return false
}

// appendFloat is encoding/json's float format (ES6 number to string).
func appendFloat(b []byte, f float64, size int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if size == 64 && (abs < 1e-6 || abs >= 1e21) || size == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, size)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const (
	lt8  = lo8 * '<'
	gt8  = lo8 * '>'
	amp8 = lo8 * '&'
)

// htmlSpecial flags the bytes encoding/json's HTML-safe string encoding
// does not copy as they are: special's set plus '<', '>' and '&'.
func htmlSpecial(x uint64) uint64 {
	l, g, a := x^lt8, x^gt8, x^amp8
	return special(x) | ((l - lo8) &^ l) | ((g - lo8) &^ g) | ((a - lo8) &^ a)
}

// appendHTMLString appends s as encoding/json writes a string.
func appendHTMLString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if m := htmlSpecial(x) & hi8; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
