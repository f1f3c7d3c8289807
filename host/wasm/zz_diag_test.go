package wasm

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolshed/toolshed/sdk/abi"
)

type counter struct{ m map[string]int }

func (c *counter) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	name := def.DebugName()
	return experimental.FunctionListenerFunc(func(ctx context.Context, mod api.Module, d api.FunctionDefinition, params []uint64, si experimental.StackIterator) {
		c.m[name]++
	})
}

func dump(t *testing.T, label string, m map[string]int) {
	type kv struct {
		k string
		v int
	}
	var all []kv
	total := 0
	for k, v := range m {
		all = append(all, kv{k, v})
		total += v
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	fmt.Printf("== %s: %d calls, %d distinct\n", label, total, len(all))
	for i, e := range all {
		if i >= 40 {
			break
		}
		fmt.Printf("  %7d %s\n", e.v, e.k)
	}
}

func TestDiagCounts(t *testing.T) {
	if os.Getenv("DIAG") == "" {
		t.Skip()
	}
	f := newFixture(t)
	c := &counter{m: map[string]int{}}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), c)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(wazero.NewCompilationCache()))
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	rt.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32) int32 { return -1 }).Export(abi.HostCall).
		NewFunctionBuilder().WithFunc(func(int32, int32) int32 { return -1 }).Export(abi.HostResult).
		Instantiate(ctx)
	cm, err := rt.CompileModule(ctx, f.code)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		t.Fatal(err)
	}
	dump(t, "instantiate", c.m)
	alloc, callFn := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportCall)
	req := []byte(`{"tool":"echo","arguments":` + echoArgs + `}`)
	for i := 0; i < 3; i++ {
		c.m = map[string]int{}
		start := time.Now()
		r, _ := alloc.Call(ctx, uint64(len(req)))
		mod.Memory().Write(uint32(r[0]), req)
		if _, err := callFn.Call(ctx, r[0], uint64(len(req))); err != nil {
			t.Fatal(err)
		}
		fmt.Println("mem", mod.Memory().Size(), time.Since(start))
		dump(t, fmt.Sprint("call ", i), c.m)
	}
}
