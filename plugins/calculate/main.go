// Command calculate is the bundled calculator plugin: arithmetic with
// exact decimals (money adds up to the cent), percentages, powers, roots
// and common functions.
package main

import (
	"strings"

	"github.com/toolshed/toolshed/sdk"
)

type args struct {
	Expression string `json:"expression"`
	Precision  *int   `json:"precision"`
}

type answer struct {
	Expression string `json:"expression"`
	Result     string `json:"result"`
	Exact      bool   `json:"exact"`
}

func init() {
	sdk.Handle("calculate", func(a args) (sdk.Result, error) {
		prec := 10
		if a.Precision != nil {
			prec = *a.Precision
		}
		v, err := Eval(a.Expression)
		if err != nil {
			return sdk.Errorf("%v", err), nil
		}
		out := answer{Expression: strings.TrimSpace(a.Expression), Result: v.Format(prec), Exact: v.Exact()}
		text := out.Expression + " = " + out.Result
		if !out.Exact {
			text += " (rounded)"
		}
		return sdk.Result{Content: text, Structured: out}, nil
	})
}

func main() {}
