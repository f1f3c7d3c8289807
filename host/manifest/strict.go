package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// kind is the JSON type a field must have.
type kind int

const (
	kAny kind = iota
	kObject
	kArray
	kString
	kInt
	kBool
)

var kindNames = [...]string{kAny: "any value", kObject: "an object", kArray: "an array",
	kString: "a string", kInt: "an integer", kBool: "true or false"}

// shape describes a field: its JSON type, the keys an object may hold and
// the shape of array elements. A free shape (a JSON Schema) takes anything.
type shape struct {
	kind  kind
	keys  map[string]*shape // object members
	items *shape            // array elements
	free  bool
}

var freeShape = &shape{free: true}

func object(keys map[string]*shape) *shape { return &shape{kind: kObject, keys: keys} }
func arrayOf(s *shape) *shape              { return &shape{kind: kArray, items: s} }

var (
	str     = &shape{kind: kString}
	integer = &shape{kind: kInt}
	boolean = &shape{kind: kBool}
	strs    = arrayOf(str)
)

var manifestShape = object(map[string]*shape{
	"name":        str,
	"version":     str,
	"abi_version": integer,
	"abi":         str,
	"servlet":     boolean,
	"description": str,
	"wasm":        str,
	"sha256":      str,
	"snapshot":    boolean,
	"capabilities": object(map[string]*shape{
		"log":       boolean,
		"config":    strs,
		"mounts":    strs,
		"http":      strs,
		"sql":       boolean,
		"artifacts": boolean,
		"client":    strs,
	}),
	"limits": object(map[string]*shape{
		"timeout_ms":    integer,
		"max_memory_mb": integer,
		"max_output_kb": integer,
	}),
	"tools": arrayOf(object(map[string]*shape{
		"name":        str,
		"description": str,
		"parameters":  freeShape,
		"keywords":    strs,
		"examples":    strs,
		"title":       str,
		"annotations": object(map[string]*shape{
			"readOnlyHint":    boolean,
			"destructiveHint": boolean,
			"idempotentHint":  boolean,
			"openWorldHint":   boolean,
		}),
		"outputSchema": freeShape,
		"export":       str,
		"input":        str,
	})),
})

// checkStrict walks the JSON tokens of data and reports every unknown or
// duplicate key and every value of the wrong type, in file order, with its
// path and line:column. The value of an unknown key or of the wrong type
// is skipped and the walk goes on. A syntax error, data after the object
// or nesting deeper than maxDepth ends the walk (fatal is then true):
// nothing after it can be read.
func checkStrict(data []byte, root *shape) (es Errors, fatal bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, data: data}
	if err := w.value(root, "", 0); err != nil {
		return append(w.errs, err), true
	}
	if _, err := dec.Token(); err != io.EOF {
		return append(w.errs, w.errAt("", "unexpected data after the manifest object")), true
	}
	return w.errs, false
}

// walker reads one document. errs collects the problems that do not stop
// it; a method returns the one that does.
type walker struct {
	dec  *json.Decoder
	data []byte
	errs Errors
}

func (w *walker) errAt(path, reason string) *FieldError {
	line, col := lineCol(w.data, int(w.dec.InputOffset()))
	return &FieldError{Field: path, Reason: fmt.Sprintf("%s (line %d, column %d)", reason, line, col)}
}

func (w *walker) syntax(path string, err error) *FieldError {
	off := int(w.dec.InputOffset())
	// A Decoder's SyntaxError offset does not always count from the start
	// of the input; Unmarshal's does, so ask it where the error is.
	var se *json.SyntaxError
	var v any
	if uerr := json.Unmarshal(w.data, &v); errors.As(uerr, &se) {
		off, err = int(se.Offset), uerr
		if strings.HasPrefix(se.Error(), "invalid character") && off > 0 {
			off-- // Offset is just past the offending byte
		}
	}
	line, col := lineCol(w.data, off)
	msg := err.Error()
	if err == io.EOF || err == io.ErrUnexpectedEOF || strings.HasPrefix(msg, "unexpected end of JSON") {
		msg = "unexpected end of JSON"
	}
	return &FieldError{Field: path, Reason: fmt.Sprintf("invalid JSON: %s (line %d, column %d)", msg, line, col)}
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// value walks one value of shape s at path. A value of the wrong kind is
// recorded and skipped.
func (w *walker) value(s *shape, path string, depth int) *FieldError {
	if depth > maxDepth {
		return w.errAt(path, fmt.Sprintf("nested deeper than %d levels", maxDepth))
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(path, err)
	}
	if s != nil && !s.free && s.kind != kAny {
		if reason := checkKind(tok, s.kind); reason != "" {
			w.errs = append(w.errs, w.errAt(path, reason))
			return w.skipRest(tok, path)
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return w.syntax(path, err)
			}
			key, _ := kt.(string)
			kp := join(path, key)
			child := freeShape
			switch {
			case seen[key]:
				w.errs = append(w.errs, w.errAt(kp, "duplicate key"))
				if err := w.skip(kp); err != nil {
					return err
				}
				continue
			case s != nil && !s.free && s.keys != nil:
				c, ok := s.keys[key]
				if !ok {
					seen[key] = true
					w.errs = append(w.errs, w.errAt(kp, "unknown field"))
					if err := w.skip(kp); err != nil {
						return err
					}
					continue
				}
				child = c
			}
			seen[key] = true
			if err := w.value(child, kp, depth+1); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return w.syntax(path, err)
		}
	case json.Delim('['):
		i := 0
		for w.dec.More() {
			child := freeShape
			if s != nil && !s.free && s.items != nil {
				child = s.items
			}
			if err := w.value(child, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
			i++
		}
		if _, err := w.dec.Token(); err != nil {
			return w.syntax(path, err)
		}
	}
	return nil
}

// skip reads past one value without looking at its shape.
func (w *walker) skip(path string) *FieldError {
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(path, err)
	}
	return w.skipRest(tok, path)
}

// skipRest reads past the rest of the value tok began. It keeps a count,
// not a stack of calls, so any nesting costs nothing but the decoder's own
// state; the document's syntax is still checked.
func (w *walker) skipRest(tok json.Token, path string) *FieldError {
	depth := 0
	for {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = w.dec.Token(); err != nil {
			return w.syntax(path, err)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// checkKind reports how tok (the first token of a value) differs from want.
func checkKind(tok json.Token, want kind) string {
	have := ""
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' && want == kObject || v == '[' && want == kArray {
			return ""
		}
		have = map[json.Delim]string{'{': "an object", '[': "an array"}[v]
	case string:
		if want == kString {
			return ""
		}
		have = "a string"
	case bool:
		if want == kBool {
			return ""
		}
		have = "true or false"
	case json.Number:
		if want == kInt {
			if _, err := strconv.ParseInt(string(v), 10, 32); err == nil {
				return ""
			}
			return fmt.Sprintf("want an integer, have %s", v)
		}
		have = "a number"
	case nil:
		have = "null"
	}
	return fmt.Sprintf("want %s, have %s", kindNames[want], have)
}
