package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode"
)

// Value is a number: exact (a rational) until an operation needs floating
// point (roots, logarithms, fractional powers).
type Value struct {
	rat   *big.Rat // when exact
	float float64  // otherwise
}

func exact(r *big.Rat) Value  { return Value{rat: r} }
func inexact(f float64) Value { return Value{float: f} }

// Exact reports whether no rounding happened.
func (v Value) Exact() bool { return v.rat != nil }

func (v Value) f() float64 {
	if v.rat != nil {
		f, _ := v.rat.Float64()
		return f
	}
	return v.float
}

// Format writes the value with at most prec decimals, trailing zeros cut.
func (v Value) Format(prec int) string {
	prec = max(0, min(prec, 34))
	var s string
	if v.rat != nil {
		s = v.rat.FloatString(prec)
	} else {
		if math.IsInf(v.float, 0) || math.IsNaN(v.float) {
			return fmt.Sprint(v.float)
		}
		s = big.NewFloat(v.float).Text('f', prec)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// Eval evaluates an expression: numbers (1,234.5 with a thousands comma
// is not accepted: write 1234.5), + - * / ^ (or **), parentheses, unary
// minus, a postfix % (divides by 100), "x% of y", and the functions sqrt,
// cbrt, abs, round(x[, digits]), floor, ceil, min, max, avg, sum, pow,
// ln, log (base 10, or log(x, base)), exp.
func Eval(expr string) (Value, error) {
	if len(expr) > 4096 {
		return Value{}, errors.New("expression longer than 4096 characters")
	}
	p := &parser{src: []rune(strings.ToLower(expr))}
	p.next()
	if p.tok.kind == tEOF {
		return Value{}, errors.New("empty expression")
	}
	v, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	if p.tok.kind != tEOF {
		return Value{}, p.errorf("unexpected %q", p.tok.text)
	}
	return v, nil
}

type kind int

const (
	tEOF kind = iota
	tNum
	tIdent
	tOp
)

type token struct {
	kind kind
	text string
	pos  int
}

type parser struct {
	src   []rune
	i     int
	tok   token
	depth int
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("at character %d: %s", p.tok.pos+1, fmt.Sprintf(format, a...))
}

func (p *parser) next() {
	for p.i < len(p.src) && unicode.IsSpace(p.src[p.i]) {
		p.i++
	}
	start := p.i
	if p.i >= len(p.src) {
		p.tok = token{tEOF, "", start}
		return
	}
	c := p.src[p.i]
	switch {
	case unicode.IsDigit(c) || c == '.':
		for p.i < len(p.src) && (unicode.IsDigit(p.src[p.i]) || p.src[p.i] == '.' || p.src[p.i] == '_') {
			p.i++
		}
		if p.i < len(p.src) && p.src[p.i] == 'e' { // exponent
			j := p.i + 1
			if j < len(p.src) && (p.src[j] == '+' || p.src[j] == '-') {
				j++
			}
			if j < len(p.src) && unicode.IsDigit(p.src[j]) {
				for j < len(p.src) && unicode.IsDigit(p.src[j]) {
					j++
				}
				p.i = j
			}
		}
		p.tok = token{tNum, strings.ReplaceAll(string(p.src[start:p.i]), "_", ""), start}
	case unicode.IsLetter(c):
		for p.i < len(p.src) && (unicode.IsLetter(p.src[p.i]) || unicode.IsDigit(p.src[p.i])) {
			p.i++
		}
		p.tok = token{tIdent, string(p.src[start:p.i]), start}
	case c == '*' && p.i+1 < len(p.src) && p.src[p.i+1] == '*':
		p.i += 2
		p.tok = token{tOp, "^", start}
	case strings.ContainsRune("+-*/^()%,×÷", c):
		p.i++
		t := string(c)
		switch c {
		case '×':
			t = "*"
		case '÷':
			t = "/"
		}
		p.tok = token{tOp, t, start}
	default:
		p.tok = token{tOp, string(c), start}
		p.i++
	}
}

func (p *parser) is(op string) bool { return p.tok.kind == tOp && p.tok.text == op }

// expr = term { (+|-) term }
func (p *parser) expr() (Value, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 200 {
		return Value{}, p.errorf("expression nested too deeply")
	}
	v, err := p.term()
	for err == nil && (p.is("+") || p.is("-")) {
		op := p.tok.text
		p.next()
		var r Value
		if r, err = p.term(); err == nil {
			v = arith(op, v, r)
		}
	}
	return v, err
}

// term = unary { (*|/) unary }
func (p *parser) term() (Value, error) {
	v, err := p.unary()
	for err == nil && (p.is("*") || p.is("/")) {
		op := p.tok.text
		p.next()
		var r Value
		if r, err = p.unary(); err != nil {
			break
		}
		if op == "/" && r.f() == 0 && (r.rat == nil || r.rat.Sign() == 0) {
			return Value{}, errors.New("division by zero")
		}
		v = arith(op, v, r)
	}
	return v, err
}

// unary = [-|+] power
func (p *parser) unary() (Value, error) {
	if p.is("-") || p.is("+") {
		neg := p.is("-")
		p.next()
		v, err := p.unary()
		if err != nil || !neg {
			return v, err
		}
		return arith("*", exact(big.NewRat(-1, 1)), v), nil
	}
	return p.power()
}

// power = postfix [ ^ unary ]   (right-associative)
func (p *parser) power() (Value, error) {
	v, err := p.postfix()
	if err != nil || !p.is("^") {
		return v, err
	}
	p.next()
	e, err := p.unary()
	if err != nil {
		return v, err
	}
	return pow(v, e)
}

// postfix = primary { % } [ "of" unary ]
func (p *parser) postfix() (Value, error) {
	v, err := p.primary()
	if err != nil {
		return v, err
	}
	pct := false
	for p.is("%") {
		p.next()
		v = arith("/", v, exact(big.NewRat(100, 1)))
		pct = true
	}
	if pct && p.tok.kind == tIdent && p.tok.text == "of" {
		p.next()
		w, err := p.unary()
		if err != nil {
			return v, err
		}
		v = arith("*", v, w)
	}
	return v, nil
}

func (p *parser) primary() (Value, error) {
	switch p.tok.kind {
	case tNum:
		r, ok := new(big.Rat).SetString(p.tok.text)
		if !ok {
			return Value{}, p.errorf("%q is not a number", p.tok.text)
		}
		p.next()
		return exact(r), nil
	case tIdent:
		name := p.tok.text
		p.next()
		switch name {
		case "pi":
			return inexact(math.Pi), nil
		case "e":
			return inexact(math.E), nil
		}
		if !p.is("(") {
			return Value{}, p.errorf("unknown name %q (functions need parentheses)", name)
		}
		p.next()
		var argv []Value
		if !p.is(")") {
			for {
				v, err := p.expr()
				if err != nil {
					return Value{}, err
				}
				argv = append(argv, v)
				if !p.is(",") {
					break
				}
				p.next()
			}
		}
		if !p.is(")") {
			return Value{}, p.errorf("missing ) after the arguments of %s", name)
		}
		p.next()
		return call(name, argv)
	case tOp:
		if p.is("(") {
			p.next()
			v, err := p.expr()
			if err != nil {
				return v, err
			}
			if !p.is(")") {
				return Value{}, p.errorf("missing )")
			}
			p.next()
			return v, nil
		}
		return Value{}, p.errorf("unexpected %q", p.tok.text)
	}
	return Value{}, p.errorf("the expression ends too early")
}

func arith(op string, a, b Value) Value {
	if a.rat != nil && b.rat != nil {
		r := new(big.Rat)
		switch op {
		case "+":
			r.Add(a.rat, b.rat)
		case "-":
			r.Sub(a.rat, b.rat)
		case "*":
			r.Mul(a.rat, b.rat)
		case "/":
			r.Quo(a.rat, b.rat)
		}
		return exact(r)
	}
	x, y := a.f(), b.f()
	switch op {
	case "+":
		return inexact(x + y)
	case "-":
		return inexact(x - y)
	case "*":
		return inexact(x * y)
	}
	return inexact(x / y)
}

func pow(a, e Value) (Value, error) {
	if a.rat != nil && e.rat != nil && e.rat.IsInt() && e.rat.Num().IsInt64() {
		n := e.rat.Num().Int64()
		if n > 4096 || n < -4096 {
			return Value{}, errors.New("exponent too large for an exact result")
		}
		if n < 0 && a.rat.Sign() == 0 {
			return Value{}, errors.New("division by zero")
		}
		num := new(big.Int).Exp(a.rat.Num(), big.NewInt(abs(n)), nil)
		den := new(big.Int).Exp(a.rat.Denom(), big.NewInt(abs(n)), nil)
		if n < 0 {
			num, den = den, num
		}
		return exact(new(big.Rat).SetFrac(num, den)), nil
	}
	return checked(math.Pow(a.f(), e.f()))
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func checked(f float64) (Value, error) {
	if math.IsNaN(f) {
		return Value{}, errors.New("the result is not a real number")
	}
	if math.IsInf(f, 0) {
		return Value{}, errors.New("the result is too large")
	}
	return inexact(f), nil
}

func call(name string, a []Value) (Value, error) {
	need := func(n int) error {
		if len(a) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d", name, n, len(a))
		}
		return nil
	}
	switch name {
	case "sqrt", "cbrt", "ln", "exp", "floor", "ceil", "abs":
		if err := need(1); err != nil {
			return Value{}, err
		}
		x := a[0]
		switch name {
		case "abs":
			if x.rat != nil {
				return exact(new(big.Rat).Abs(x.rat)), nil
			}
			return inexact(math.Abs(x.float)), nil
		case "floor", "ceil":
			f := math.Floor
			if name == "ceil" {
				f = math.Ceil
			}
			if x.rat != nil {
				q := new(big.Int).Quo(x.rat.Num(), x.rat.Denom()) // truncates towards zero
				r := new(big.Rat).SetInt(q)
				if r.Cmp(x.rat) != 0 && ((name == "floor") == (x.rat.Sign() < 0)) {
					step := big.NewRat(1, 1)
					if name == "floor" {
						r.Sub(r, step)
					} else {
						r.Add(r, step)
					}
				}
				return exact(r), nil
			}
			return inexact(f(x.float)), nil
		case "sqrt":
			if x.f() < 0 {
				return Value{}, errors.New("square root of a negative number")
			}
			return checked(math.Sqrt(x.f()))
		case "cbrt":
			return checked(math.Cbrt(x.f()))
		case "ln":
			if x.f() <= 0 {
				return Value{}, errors.New("logarithm of a number that is not positive")
			}
			return checked(math.Log(x.f()))
		default:
			return checked(math.Exp(x.f()))
		}
	case "log":
		if len(a) == 0 || len(a) > 2 || a[0].f() <= 0 {
			return Value{}, errors.New("log takes a positive number and an optional base")
		}
		if len(a) == 2 {
			if a[1].f() <= 0 || a[1].f() == 1 {
				return Value{}, errors.New("log base must be positive and not 1")
			}
			return checked(math.Log(a[0].f()) / math.Log(a[1].f()))
		}
		return checked(math.Log10(a[0].f()))
	case "pow":
		if err := need(2); err != nil {
			return Value{}, err
		}
		return pow(a[0], a[1])
	case "round":
		if len(a) == 0 || len(a) > 2 {
			return Value{}, errors.New("round takes a number and optional decimal places")
		}
		digits := int64(0)
		if len(a) == 2 {
			if a[1].rat == nil || !a[1].rat.IsInt() {
				return Value{}, errors.New("round: decimal places must be a whole number")
			}
			digits = a[1].rat.Num().Int64()
		}
		if a[0].rat == nil {
			m := math.Pow(10, float64(digits))
			return inexact(math.Round(a[0].float*m) / m), nil
		}
		// Exact half-away-from-zero rounding.
		scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(digits)), nil))
		x := new(big.Rat).Set(a[0].rat)
		if digits >= 0 {
			x.Mul(x, scale)
		} else {
			x.Quo(x, scale)
		}
		half := big.NewRat(1, 2)
		if x.Sign() < 0 {
			x.Sub(x, half)
		} else {
			x.Add(x, half)
		}
		q := new(big.Int).Quo(x.Num(), x.Denom())
		r := new(big.Rat).SetInt(q)
		if digits >= 0 {
			r.Quo(r, scale)
		} else {
			r.Mul(r, scale)
		}
		return exact(r), nil
	case "min", "max", "sum", "avg", "average", "mean":
		if len(a) == 0 {
			return Value{}, fmt.Errorf("%s needs at least one number", name)
		}
		acc := a[0]
		for _, v := range a[1:] {
			switch name {
			case "min", "max":
				if d := arith("-", v, acc); (name == "min") == (d.f() < 0) && d.f() != 0 {
					acc = v
				}
			default:
				acc = arith("+", acc, v)
			}
		}
		if name == "avg" || name == "average" || name == "mean" {
			acc = arith("/", acc, exact(big.NewRat(int64(len(a)), 1)))
		}
		return acc, nil
	}
	return Value{}, fmt.Errorf("unknown function %s (known: abs, avg, cbrt, ceil, exp, floor, ln, log, max, min, pow, round, sqrt, sum)", name)
}
