package main

import (
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	for expr, want := range map[string]string{
		"0.1 + 0.2":                   "0.3",
		"(1250.5 - 980) / 980 * 100":  "27.6020408163",
		"19.99 * 3":                   "59.97",
		"15% of 2340":                 "351",
		"2340 * 15%":                  "351",
		"2 ^ 10":                      "1024",
		"2 ** -2":                     "0.25",
		"-3 ^ 2":                      "-9",
		"2 ^ 3 ^ 2":                   "512",
		"sqrt(16)":                    "4",
		"round(2.675, 2)":             "2.68",
		"round(-2.5)":                 "-3",
		"round(1234.5, -2)":           "1200",
		"floor(-1.5) + ceil(1.2)":     "0",
		"avg(1, 2, 3, 4)":             "2.5",
		"max(3, 9, 4) - min(3, 9, 4)": "6",
		"sum(0.1, 0.1, 0.1)":          "0.3",
		"log(1000)":                   "3",
		"log(8, 2)":                   "3",
		"abs(-7.25)":                  "7.25",
		"10 ÷ 4 × 2":                  "5",
		"1e3 + 1_000":                 "2000",
		"1/3":                         "0.3333333333",
	} {
		v, err := Eval(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := v.Format(10); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	if v, _ := Eval("0.1 * 3"); !v.Exact() {
		t.Error("0.1*3 should be exact")
	}
	if v, _ := Eval("sqrt(2)"); v.Exact() {
		t.Error("sqrt(2) cannot be exact")
	}
}

func TestEvalErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":              "empty expression",
		"1 +":           "ends too early",
		"(1 + 2":        "missing )",
		"1 / 0":         "division by zero",
		"1 / (2 - 2)":   "division by zero",
		"sqrt(-1)":      "negative",
		"foo(1)":        "unknown function foo",
		"x + 1":         `unknown name "x"`,
		"2 $ 3":         `at character 3: unexpected "$"`,
		"2 ^ 100000":    "exponent too large",
		"ln(0)":         "not positive",
		"round(1, 0.5)": "whole number",
		"10 ^ 400.5":    "too large",
		strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300): "nested too deeply",
	} {
		_, err := Eval(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", expr, err, want)
		}
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2", "round(2.5)", "15% of 80", "2^-3", "((1))", "max()", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := Eval(s); err == nil {
			v.Format(10)
		}
	})
}
