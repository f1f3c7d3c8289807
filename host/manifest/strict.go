package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// shape describes which keys an object may hold; nil means any (free-form,
// such as a JSON Schema).
type shape struct {
	keys  map[string]*shape // object members
	items *shape            // array elements
	free  bool
}

var freeShape = &shape{free: true}

func object(keys map[string]*shape) *shape { return &shape{keys: keys} }
func arrayOf(s *shape) *shape               { return &shape{items: s} }

var leaf = &shape{}

var manifestShape = object(map[string]*shape{
	"name":        leaf,
	"version":     leaf,
	"abi_version": leaf,
	"description": leaf,
	"wasm":        leaf,
	"sha256":      leaf,
	"capabilities": object(map[string]*shape{
		"log":    leaf,
		"config": arrayOf(leaf),
		"mounts": arrayOf(leaf),
		"http":   arrayOf(leaf),
		"sql":    leaf,
	}),
	"limits": object(map[string]*shape{
		"timeout_ms":    leaf,
		"max_memory_mb": leaf,
		"max_output_kb": leaf,
	}),
	"tools": arrayOf(object(map[string]*shape{
		"name":        leaf,
		"description": leaf,
		"parameters":  freeShape,
		"keywords":    arrayOf(leaf),
		"examples":    arrayOf(leaf),
	})),
})

// checkStrict walks the JSON tokens of data and reports the first unknown
// or duplicate key, or syntax error, with its path and line:column.
func checkStrict(data []byte, root *shape) *FieldError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, data: data}
	if err := w.value(root, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return w.errAt("", "unexpected data after the manifest object")
	}
	return nil
}

type walker struct {
	dec  *json.Decoder
	data []byte
}

func (w *walker) errAt(path, reason string) *FieldError {
	line, col := lineCol(w.data, int(w.dec.InputOffset()))
	return &FieldError{Field: path, Reason: fmt.Sprintf("%s (line %d, column %d)", reason, line, col)}
}

func (w *walker) syntax(path string, err error) *FieldError {
	var se *json.SyntaxError
	off := int(w.dec.InputOffset())
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	line, col := lineCol(w.data, off)
	msg := err.Error()
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		msg = "unexpected end of JSON"
	}
	return &FieldError{Field: path, Reason: fmt.Sprintf("invalid JSON: %s (line %d, column %d)", msg, line, col)}
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

func (w *walker) value(s *shape, path string) *FieldError {
	return w.valueDepth(s, path, 0)
}

func (w *walker) valueDepth(s *shape, path string, depth int) *FieldError {
	if depth > maxDepth {
		return w.errAt(path, fmt.Sprintf("nested deeper than %d levels", maxDepth))
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(path, err)
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
			if seen[key] {
				return w.errAt(kp, "duplicate key")
			}
			seen[key] = true
			var child *shape
			switch {
			case s == nil || s.free:
				child = freeShape
			case s.keys != nil:
				c, ok := s.keys[key]
				if !ok {
					return w.errAt(kp, "unknown field")
				}
				child = c
			default:
				child = leaf // type mismatch; reported by decoding
			}
			if err := w.valueDepth(child, kp, depth+1); err != nil {
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
			if s != nil && !s.free {
				child = leaf
				if s.items != nil {
					child = s.items
				}
			}
			if err := w.valueDepth(child, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
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
