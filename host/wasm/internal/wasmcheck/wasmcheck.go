// Package wasmcheck reads a WebAssembly binary before any compiler sees it
// and refuses what would cost the host more than a stated budget: module
// size, number of functions, a function body's size, its locals, the
// nesting of its control instructions, and tables that could grow without
// bound.
//
// The decoder is our own and deliberately small: it walks the sections
// and every instruction of every function body, with the immediates of
// each opcode of WebAssembly 2.0 (the features wazero's default runtime
// configuration accepts: multi-value, bulk memory, reference types,
// non-trapping float-to-int, sign extension and 128-bit SIMD). Anything it
// cannot decode (a proposal not enabled, an unknown opcode, a truncated
// body) is refused with an error that names the function and the offset,
// so no construct can slip past the budget by being unknown to it.
//
// Check is a pure function of its input and safe for concurrent use.
package wasmcheck

import (
	"errors"
	"fmt"
)

// Limits is a budget. A zero field means no limit on that measure.
type Limits struct {
	ModuleBytes   int    // size of the whole binary
	Functions     int    // functions defined by the module (imports aside)
	FunctionBytes int    // size of one function body, locals included
	Locals        int    // locals declared by one function (parameters aside)
	Nesting       int    // depth of nested block, loop and if in one function
	TableElements uint64 // sum over all tables of their declared maximum
}

// Stats are what Check measured: the largest value of each measure.
type Stats struct {
	ModuleBytes   int
	Functions     int
	FunctionBytes int    // largest body
	Locals        int    // most locals in one function
	Nesting       int    // deepest nesting in one function
	TableElements uint64 // sum of the tables' maxima (the minimum when none is declared)
	// DataOps: some function uses memory.init or data.drop.
	DataOps bool
	// TableWrites: some function changes a table (table.set, table.grow,
	// table.fill, table.copy, table.init or elem.drop).
	TableWrites bool

	unbounded string // the first table without a maximum
	growAt    int    // a function using table.grow; -1 when none
}

// ErrUnboundedTable is a module that grows a table declaring no maximum.
// A table without a maximum is accepted when the module has no
// table.grow: its size then stays at its minimum.
var ErrUnboundedTable = errors.New("a table that grows must declare a maximum")

// LimitError is a budget the module goes over.
type LimitError struct {
	Limit    string // the measure, as Limits names it in words
	Value    uint64 // what the module has (a lower bound when the decoder stopped early)
	Max      uint64 // what the budget allows
	Function int    // index in the function index space (imports counted); -1 if not about one function
}

func (e *LimitError) Error() string {
	where := ""
	if e.Function >= 0 {
		where = fmt.Sprintf("function %d: ", e.Function)
	}
	return fmt.Sprintf("%s%s is %d, over the limit of %d", where, e.Limit, e.Value, e.Max)
}

// Check decodes code and returns its measures, or the first limit it goes
// over (a *LimitError), or why it is not a module this host can decode.
func Check(code []byte, l Limits) (Stats, error) {
	st := Stats{ModuleBytes: len(code), growAt: -1}
	if over(uint64(len(code)), l.ModuleBytes) {
		return st, &LimitError{Limit: "module size in bytes", Value: uint64(len(code)), Max: uint64(l.ModuleBytes), Function: -1}
	}
	r := &reader{b: code}
	if len(code) < 8 || string(code[:4]) != "\x00asm" {
		return st, errors.New("not a WebAssembly binary (no \\0asm magic)")
	}
	if code[4] != 1 || code[5] != 0 || code[6] != 0 || code[7] != 0 {
		return st, fmt.Errorf("WebAssembly binary version %x is not 1", code[4:8])
	}
	r.pos = 8
	importedFuncs := 0
	declared := -1 // function section count
	lastID := byte(0)
	for r.pos < len(r.b) {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			return st, r.err
		}
		if uint64(size) > uint64(len(r.b)-r.pos) {
			return st, fmt.Errorf("section %d at offset %d: size %d runs past the end of the module", id, r.pos, size)
		}
		body := &reader{b: r.b[r.pos : r.pos+int(size)], base: r.pos}
		r.pos += int(size)
		if id != 0 {
			if order(id) <= order(lastID) {
				return st, fmt.Errorf("section %d at offset %d is out of order or repeated", id, body.base)
			}
			lastID = id
		}
		var err error
		switch id {
		case 0, 1, 5, 6, 7, 8, 9, 11, 12:
			// Custom, type, memory, global, export, start, element, data,
			// data count: bounded by the module's size, compiled in time
			// linear in it; wazero validates them.
		case 2:
			importedFuncs, err = importSection(body, l, &st)
		case 3:
			var n uint32
			n = body.u32()
			declared = int(n)
			st.Functions = declared
			if over(uint64(n), l.Functions) {
				return st, &LimitError{Limit: "number of functions", Value: uint64(n), Max: uint64(l.Functions), Function: -1}
			}
			err = body.err
		case 4:
			err = tableSection(body, l, &st)
		case 10:
			err = codeSection(body, importedFuncs, declared, l, &st)
		default:
			return st, fmt.Errorf("section id %d at offset %d is not supported", id, body.base)
		}
		if err != nil {
			return st, err
		}
	}
	if st.unbounded != "" && st.growAt >= 0 {
		return st, fmt.Errorf("%s declares no maximum size and function %d grows a table (table.grow): %w (the budget is %d elements in all tables)", st.unbounded, st.growAt, ErrUnboundedTable, l.TableElements)
	}
	return st, nil
}

// order is a known section's place in the binary (data count comes
// between element and code).
func order(id byte) int {
	switch id {
	case 12:
		return 95 // after element (9), before code (10)
	}
	return int(id) * 10
}

func over(v uint64, limit int) bool { return limit > 0 && v > uint64(limit) }

func importSection(r *reader, l Limits, st *Stats) (funcs int, err error) {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0x00: // function
			r.u32()
			funcs++
		case 0x01: // table
			r.byte()
			if err := tableLimits(r, l, st, fmt.Sprintf("imported table %d", i)); err != nil {
				return 0, err
			}
		case 0x02: // memory
			r.limits()
		case 0x03: // global
			r.byte()
			r.byte()
		default:
			if r.err == nil {
				return 0, fmt.Errorf("import %d at offset %d: import kind %#x is not supported", i, r.base+r.pos, kind)
			}
		}
	}
	return funcs, r.err
}

func tableSection(r *reader, l Limits, st *Stats) error {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if t := r.byte(); t != 0x70 && t != 0x6f && r.err == nil {
			return fmt.Errorf("table %d at offset %d: element type %#x is not supported", i, r.base+r.pos-1, t)
		}
		if err := tableLimits(r, l, st, fmt.Sprintf("table %d", i)); err != nil {
			return err
		}
	}
	return r.err
}

func tableLimits(r *reader, l Limits, st *Stats, what string) error {
	min, max, hasMax := r.limits()
	if r.err != nil {
		return r.err
	}
	if !hasMax {
		// Without table.grow in the module (checked at the end) its
		// size stays at the minimum.
		max = min
		if st.unbounded == "" {
			st.unbounded = what
		}
	} else if max < min {
		return fmt.Errorf("%s: maximum %d is below its minimum %d", what, max, min)
	}
	st.TableElements += uint64(max)
	if l.TableElements > 0 && st.TableElements > l.TableElements {
		return &LimitError{Limit: "sum of tables' maximum sizes in elements", Value: st.TableElements, Max: l.TableElements, Function: -1}
	}
	return nil
}

func codeSection(r *reader, imported, declared int, l Limits, st *Stats) error {
	n := r.u32()
	if r.err != nil {
		return r.err
	}
	if int64(n) != int64(declared) {
		return fmt.Errorf("code section has %d bodies for %d declared functions", n, max(declared, 0))
	}
	for i := 0; i < int(n); i++ {
		fn := imported + i
		size := r.u32()
		if r.err != nil {
			return r.err
		}
		if over(uint64(size), l.FunctionBytes) {
			return &LimitError{Limit: "body size in bytes", Value: uint64(size), Max: uint64(l.FunctionBytes), Function: fn}
		}
		if uint64(size) > uint64(len(r.b)-r.pos) {
			return fmt.Errorf("function %d: body runs past the end of the code section", fn)
		}
		st.FunctionBytes = max(st.FunctionBytes, int(size))
		body := &reader{b: r.b[r.pos : r.pos+int(size)], base: r.base + r.pos}
		r.pos += int(size)
		if err := function(body, fn, l, st); err != nil {
			return err
		}
	}
	if r.pos != len(r.b) {
		return errors.New("code section has bytes after its last body")
	}
	return nil
}

func function(r *reader, fn int, l Limits, st *Stats) error {
	groups := r.u32()
	var locals uint64
	for g := uint32(0); g < groups && r.err == nil; g++ {
		locals += uint64(r.u32())
		r.byte()
		if over(locals, l.Locals) {
			return &LimitError{Limit: "number of locals", Value: locals, Max: uint64(l.Locals), Function: fn}
		}
	}
	if r.err != nil {
		return fmt.Errorf("function %d: %w", fn, r.err)
	}
	st.Locals = max(st.Locals, int(min(locals, 1<<31)))
	depth := 1 // the function's own block
	deepest := 0
	for r.pos < len(r.b) {
		at := r.base + r.pos
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.blockType()
			depth++
			if d := depth - 1; d > deepest {
				deepest = d
				if over(uint64(d), l.Nesting) {
					return &LimitError{Limit: "control nesting depth", Value: uint64(d), Max: uint64(l.Nesting), Function: fn}
				}
			}
		case op == 0x0b: // end
			depth--
			if depth == 0 {
				if r.pos != len(r.b) {
					return fmt.Errorf("function %d: bytes after the final end at offset %d", fn, at)
				}
				st.Nesting = max(st.Nesting, deepest)
				return nil
			}
		default:
			switch {
			case op == 0x26: // table.set
				st.TableWrites = true
			case op == 0xfc:
				peek := *r // the sub-opcode, however it is encoded
				switch peek.u32() {
				case 8, 9: // memory.init, data.drop
					st.DataOps = true
				case 12, 13, 14, 17: // table.init, elem.drop, table.copy, table.fill
					st.TableWrites = true
				case 15: // table.grow
					st.TableWrites = true
					if st.growAt < 0 {
						st.growAt = fn
					}
				}
			}
			if err := immediates(r, op); err != nil {
				return fmt.Errorf("function %d, offset %d: %w", fn, at, err)
			}
		}
		if r.err != nil {
			return fmt.Errorf("function %d, offset %d: %w", fn, at, r.err)
		}
	}
	return fmt.Errorf("function %d: body ends without its final end", fn)
}

// immediates skips the immediates of op (any opcode but block, loop, if
// and end), or says why op is not accepted.
func immediates(r *reader, op byte) error {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b:
		// unreachable, nop, else, return, drop, select
	case op == 0x0c || op == 0x0d: // br, br_if
		r.u32()
	case op == 0x0e: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x10: // call
		r.u32()
	case op == 0x11: // call_indirect: type, table
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.byte()
		}
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41:
		r.sleb(32)
	case op == 0x42:
		r.sleb(64)
	case op == 0x43:
		r.skip(4)
	case op == 0x44:
		r.skip(8)
	case op >= 0x45 && op <= 0xc4: // numeric and sign extension
	case op == 0xd0: // ref.null t
		r.byte()
	case op == 0xd1: // ref.is_null
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0xfc:
		return misc(r)
	case op == 0xfd:
		return simd(r)
	case op == 0x06 || op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0a || op == 0x18 || op == 0x19 || op == 0x1f:
		return fmt.Errorf("opcode %#02x (exception handling) is not supported", op)
	case op == 0x12 || op == 0x13:
		return fmt.Errorf("opcode %#02x (tail call) is not supported", op)
	case op == 0xfe:
		return errors.New("opcode prefix 0xfe (threads) is not supported")
	default:
		return fmt.Errorf("opcode %#02x is not supported", op)
	}
	return nil
}

func misc(r *reader) error {
	switch sub := r.u32(); sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case 8: // memory.init data, mem
		r.u32()
		r.u32()
	case 9, 13, 15, 16, 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case 10, 12, 14: // memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case 11: // memory.fill
		r.u32()
	default:
		if r.err == nil {
			return fmt.Errorf("opcode 0xfc %d is not supported", sub)
		}
	}
	return nil
}

// simdInvalid are the 0xfd sub-opcodes below 256 that WebAssembly 2.0
// leaves unassigned (wazero 1.12 accepts every other one).
var simdInvalid = map[uint32]bool{0x9a: true, 0xa2: true, 0xa5: true, 0xa6: true, 0xaf: true, 0xb0: true,
	0xb2: true, 0xb3: true, 0xb4: true, 0xbb: true, 0xc2: true, 0xc5: true, 0xc6: true, 0xcf: true,
	0xd0: true, 0xd2: true, 0xd3: true, 0xd4: true, 0xe2: true, 0xee: true}

func simd(r *reader) error {
	sub := r.u32()
	switch {
	case r.err != nil:
	case sub > 0xff || simdInvalid[sub]:
		return fmt.Errorf("opcode 0xfd %d is not supported", sub)
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.skip(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		r.memarg()
		r.byte()
	}
	return nil
}

// reader decodes LEB128 and bytes; the first error sticks.
type reader struct {
	b    []byte
	pos  int
	base int // offset of b in the module, for messages
	err  error
}

var errEOF = errors.New("unexpected end")

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.err = errEOF
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) skip(n int) {
	if r.err == nil && len(r.b)-r.pos < n {
		r.err = errEOF
		return
	}
	r.pos += n
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift >= bits || (shift+7 > bits && c&0x7f>>(bits-shift) != 0) {
			r.err = errors.New("integer too large")
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb skips a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) {
	for n := uint(0); ; n += 7 {
		c := r.byte()
		if r.err != nil {
			return
		}
		if n >= bits {
			r.err = errors.New("integer too large")
			return
		}
		if c&0x80 == 0 {
			return
		}
	}
}

func (r *reader) name() {
	n := r.u32()
	r.skip(int(n))
}

func (r *reader) memarg() {
	r.u32() // alignment (bit 6 would be a memory index: multi-memory, refused by wazero)
	r.u32() // offset
}

// blockType skips a block type: 0x40, a value type, or a type index (s33).
func (r *reader) blockType() {
	if r.pos < len(r.b) {
		switch c := r.b[r.pos]; c {
		case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
			r.pos++
			return
		}
	}
	r.sleb(33)
}

// limits reads table or memory limits.
func (r *reader) limits() (min, max uint32, hasMax bool) {
	switch flags := r.byte(); flags {
	case 0x00:
		return r.u32(), 0, false
	case 0x01, 0x03: // 0x03: shared (threads), refused later by wazero
		min = r.u32()
		return min, r.u32(), true
	default:
		if r.err == nil {
			r.err = fmt.Errorf("limits flags %#x are not supported", flags)
		}
	}
	return 0, 0, false
}
