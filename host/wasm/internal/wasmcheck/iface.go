package wasmcheck

import (
	"errors"
	"fmt"
)

// ValueType is a WebAssembly value type as the binary encodes it (0x7f
// i32, 0x7e i64, 0x7d f32, 0x7c f64, 0x7b v128, 0x70 funcref, 0x6f
// externref).
type ValueType byte

// Value types an ABI check looks for.
const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
)

// FuncType is a function's signature.
type FuncType struct {
	Params, Results []ValueType
}

// Import is one import of a module.
type Import struct {
	Module, Name string
	Kind         byte      // 0 function, 1 table, 2 memory, 3 global
	Func         *FuncType // for a function
}

// Export is one export of a module.
type Export struct {
	Name string
	Kind byte      // 0 function, 1 table, 2 memory, 3 global
	Func *FuncType // for a function
}

// Interface is what a module imports and exports, in the binary's order.
type Interface struct {
	Imports []Import
	Exports []Export
}

// Export returns the export with this name.
func (in *Interface) Export(name string) (Export, bool) {
	for _, e := range in.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// ReadInterface reads a module's imports and exports from its type,
// import, function and export sections, without walking any function
// body: its cost is linear in those sections, not in the code. It is a
// pure function of code and safe for concurrent use.
func ReadInterface(code []byte) (*Interface, error) {
	if len(code) < 8 || string(code[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly binary (no \\0asm magic)")
	}
	if code[4] != 1 || code[5] != 0 || code[6] != 0 || code[7] != 0 {
		return nil, fmt.Errorf("WebAssembly binary version %x is not 1", code[4:8])
	}
	r := &reader{b: code, pos: 8}
	var (
		types []FuncType
		funcs []*FuncType // the function index space: imports, then definitions
		in    = &Interface{}
	)
	typeAt := func(r *reader, i uint32) (*FuncType, error) {
		if r.err != nil {
			return nil, r.err
		}
		if uint64(i) >= uint64(len(types)) {
			return nil, fmt.Errorf("type index %d at offset %d is out of range (%d types)", i, r.base+r.pos, len(types))
		}
		return &types[i], nil
	}
	for r.pos < len(r.b) && r.err == nil {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			break
		}
		if uint64(size) > uint64(len(r.b)-r.pos) {
			return nil, fmt.Errorf("section %d at offset %d: size %d runs past the end of the module", id, r.pos, size)
		}
		s := &reader{b: r.b[r.pos : r.pos+int(size)], base: r.pos}
		r.pos += int(size)
		switch id {
		case 1: // types
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				if form := s.byte(); form != 0x60 && s.err == nil {
					return nil, fmt.Errorf("type %d at offset %d: form %#x is not a function type", i, s.base+s.pos-1, form)
				}
				var ft FuncType
				ft.Params = s.valueTypes()
				ft.Results = s.valueTypes()
				types = append(types, ft)
			}
		case 2: // imports
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				im := Import{Module: s.str(), Name: s.str(), Kind: s.byte()}
				switch im.Kind {
				case 0x00:
					ft, err := typeAt(s, s.u32())
					if err != nil {
						return nil, err
					}
					im.Func = ft
					funcs = append(funcs, ft)
				case 0x01:
					s.byte()
					s.limits()
				case 0x02:
					s.limits()
				case 0x03:
					s.byte()
					s.byte()
				default:
					if s.err == nil {
						return nil, fmt.Errorf("import %d at offset %d: import kind %#x is not supported", i, s.base+s.pos, im.Kind)
					}
				}
				in.Imports = append(in.Imports, im)
			}
		case 3: // function declarations
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				ft, err := typeAt(s, s.u32())
				if err != nil {
					return nil, err
				}
				funcs = append(funcs, ft)
			}
		case 7: // exports
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				e := Export{Name: s.str(), Kind: s.byte()}
				idx := s.u32()
				if e.Kind == 0x00 && s.err == nil {
					if uint64(idx) >= uint64(len(funcs)) {
						return nil, fmt.Errorf("export %q: function index %d is out of range (%d functions)", e.Name, idx, len(funcs))
					}
					e.Func = funcs[idx]
				}
				in.Exports = append(in.Exports, e)
			}
		}
		if s.err != nil {
			return nil, fmt.Errorf("section %d at offset %d: %w", id, s.base, s.err)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return in, nil
}

// valueTypes reads a vector of value types.
func (r *reader) valueTypes() []ValueType {
	n := r.u32()
	if r.err == nil && uint64(n) > uint64(len(r.b)-r.pos) {
		r.err = errEOF
		return nil
	}
	out := make([]ValueType, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = append(out, ValueType(r.byte()))
	}
	return out
}

// str reads a name.
func (r *reader) str() string {
	n := r.u32()
	start := r.pos
	r.skip(int(n))
	if r.err != nil {
		return ""
	}
	return string(r.b[start:r.pos])
}
