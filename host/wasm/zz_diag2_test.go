package wasm

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolshed/toolshed/sdk/abi"
)

func TestDiagTimes(t *testing.T) {
	if os.Getenv("DIAG") == "" {
		t.Skip()
	}
	f := newFixture(t)
	for _, term := range []bool{true, false} {
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(term).WithCompilationCache(wazero.NewCompilationCache()))
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		rt.NewHostModuleBuilder(abi.HostModule).
			NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32) int32 { return -1 }).Export(abi.HostCall).
			NewFunctionBuilder().WithFunc(func(int32, int32) int32 { return -1 }).Export(abi.HostResult).
			Instantiate(ctx)
		cm, _ := rt.CompileModule(ctx, f.code)
		mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize))
		if err != nil {
			t.Fatal(err)
		}
		ver := mod.ExportedFunction(abi.ExportVersion)
		alloc, callFn := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportCall)
		stat := func(label string, fn func()) {
			var d []time.Duration
			for i := 0; i < 2000; i++ {
				s := time.Now()
				fn()
				d = append(d, time.Since(s))
			}
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			fmt.Printf("term=%v %-10s mean %v p50 %v p90 %v p99 %v max %v\n", term, label, sum/time.Duration(len(d)), d[len(d)/2], d[len(d)*9/10], d[len(d)*99/100], d[len(d)-1])
		}
		stat("version", func() { ver.Call(ctx) })
		stat("alloc", func() { alloc.Call(ctx, 200) })
		req := []byte(`{"tool":"echo","arguments":` + echoArgs + `}`)
		stat("echo", func() {
			r, _ := alloc.Call(ctx, uint64(len(req)))
			mod.Memory().Write(uint32(r[0]), req)
			if _, err := callFn.Call(ctx, r[0], uint64(len(req))); err != nil {
				t.Fatal(err)
			}
		})
		sreq := []byte(`{"tool":"spin","arguments":{"n":1}}`)
		stat("spin1", func() {
			r, _ := alloc.Call(ctx, uint64(len(sreq)))
			mod.Memory().Write(uint32(r[0]), sreq)
			if _, err := callFn.Call(ctx, r[0], uint64(len(sreq))); err != nil {
				t.Fatal(err)
			}
		})
		rt.Close(ctx)
	}
}
