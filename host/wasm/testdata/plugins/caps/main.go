// Command caps exercises every capability helper of the SDK.
package main

import (
	"strings"

	"github.com/toolshed/toolshed/sdk"
	"github.com/toolshed/toolshed/sdk/abi"
)

type args struct {
	Key   string `json:"key"`
	Mount string `json:"mount"`
	Path  string `json:"path"`
	URL   string `json:"url"`
	SQL   string `json:"sql"`
}

func errResult(err error) (sdk.Result, error) { return sdk.Result{}, err }

func init() {
	sdk.Handle("log", func(a args) (sdk.Result, error) {
		if err := sdk.Log("info", "hello from caps"); err != nil {
			return errResult(err)
		}
		return sdk.Text("logged"), nil
	})
	sdk.Handle("config", func(a args) (sdk.Result, error) {
		v, err := sdk.Config(a.Key)
		if err != nil {
			return errResult(err)
		}
		return sdk.Text("%s", v), nil
	})
	sdk.Handle("read", func(a args) (sdk.Result, error) {
		b, err := sdk.ReadFile(a.Mount, a.Path)
		if err != nil {
			return errResult(err)
		}
		return sdk.Text("%s", b), nil
	})
	sdk.Handle("list", func(a args) (sdk.Result, error) {
		es, err := sdk.ReadDir(a.Mount, a.Path)
		if err != nil {
			return errResult(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name)
		}
		return sdk.Text("%s", strings.Join(names, ",")), nil
	})
	sdk.Handle("fetch", func(a args) (sdk.Result, error) {
		r, err := sdk.Fetch(abi.HTTPRequest{URL: a.URL})
		if err != nil {
			return errResult(err)
		}
		return sdk.JSON(r), nil
	})
	sdk.Handle("query", func(a args) (sdk.Result, error) {
		r, err := sdk.Query(a.SQL, 1, "two")
		if err != nil {
			return errResult(err)
		}
		return sdk.JSON(r), nil
	})
	sdk.Handle("panics", func(a args) (sdk.Result, error) {
		var m map[string]int
		m["x"] = 1 // a handler bug: the SDK turns it into a tool error
		return sdk.Text("unreachable"), nil
	})
}

func main() {}
