package wasmcheck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolshed/toolshed/internal/wasmbuild"
)

func split(t *testing.T, code []byte, gap int) (*Image, error) {
	t.Helper()
	st, err := Check(code, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return Split(code, st, gap)
}

// layout instantiates a module with no start function and returns its
// memory and the values of the given exported globals; with img, the
// module is img.Module and the host copies img.Segments first.
func layout(t *testing.T, rt wazero.Runtime, code []byte, img *Image, globals map[string]string) ([]byte, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	if img != nil {
		code = img.Module
	}
	mod, err := rt.InstantiateWithConfig(ctx, code, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	mem := mod.Memory()
	if img != nil {
		for _, s := range img.Segments {
			if !mem.Write(s.Offset, s.Data) {
				t.Fatalf("segment at %d does not fit", s.Offset)
			}
		}
	}
	b, _ := mem.Read(0, mem.Size())
	vals := map[string]uint64{}
	for orig, reserved := range globals {
		name := orig
		if img != nil {
			name = reserved
		}
		g := mod.ExportedGlobal(name)
		if g == nil {
			t.Fatalf("no global %s", name)
		}
		vals[orig] = g.Get()
	}
	return bytes.Clone(b), vals
}

// A split module with its segments copied in has the memory and globals
// the original has after instantiation.
func TestSplitEquivalent(t *testing.T) {
	code := wasmbuild.WAT(t, []byte(`(module
  (memory (export "memory") 1)
  (global $g (export "g") (mut i32) (i32.const 5))
  (global $h (mut i64) (i64.const -7))
  (global $c i32 (i32.const 1))
  (data (i32.const 16) "ab")
  (data (i32.const 20) "cd")
  (data (i32.const 9000) "far")
  (data (i32.const 40) "")
  (func (export "f") (result i32) global.get $g))`))
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	want, wantG := layout(t, rt, code, nil, map[string]string{"g": "toolshed.global.0"})
	for _, c := range []struct {
		gap      int
		segments int
	}{{0, 3}, {2, 2}, {4096, 2}, {16384, 1}} {
		img, err := split(t, code, c.gap)
		if err != nil {
			t.Fatal(err)
		}
		if len(img.Segments) != c.segments || img.SegmentsBefore != 4 || img.MinPages != 1 {
			t.Errorf("gap %d: %d segments of %d, min %d pages; want %d", c.gap, len(img.Segments), img.SegmentsBefore, img.MinPages, c.segments)
		}
		if strings.Join(img.Globals, ",") != "toolshed.global.0,toolshed.global.1" {
			t.Errorf("globals %v", img.Globals)
		}
		got, gotG := layout(t, rt, code, img, map[string]string{"g": "toolshed.global.0"})
		if !bytes.Equal(got, want) || gotG["g"] != wantG["g"] {
			t.Errorf("gap %d: the split module's memory or globals differ from the original's", c.gap)
		}
	}
}

// A module without an export section gets one, in its place.
func TestSplitAddsExports(t *testing.T) {
	code := wasmbuild.WAT(t, []byte(`(module (memory 1) (global (mut i32) (i32.const 9)) (data (i32.const 0) "x") (func))`))
	img, err := split(t, code, 64)
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	mod, err := rt.Instantiate(context.Background(), img.Module)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := mod.ExportedGlobal("toolshed.global.0").(api.MutableGlobal)
	if !ok || g.Get() != 9 {
		t.Fatalf("global not exported as mutable: %v", g)
	}
}

// Modules whose data a host could not apply ahead are kept whole.
func TestSplitKeeps(t *testing.T) {
	for _, c := range []struct{ name, wat, why string }{
		{"passive", `(module (memory 1) (data "x") (func))`, "passive"},
		{"start", `(module (memory 1) (func $s) (start $s) (data (i32.const 0) "x"))`, "start function"},
		{"memory.init", `(module (memory 1) (data $d "x") (func (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1))))`, "memory.init"},
		{"overlap", `(module (memory 1) (data (i32.const 16) "abcd") (data (i32.const 18) "zz"))`, "overlap"},
		{"computed offset", `(module (memory 1) (data (i32.add (i32.const 1) (i32.const 2)) "x"))`, "i32.const"},
		{"past minimum", `(module (memory 1) (data (i32.const 65535) "xy"))`, "past the memory's minimum"},
		{"imported memory", `(module (import "m" "mem" (memory 1)) (data (i32.const 0) "x"))`, "imports a memory"},
		{"imported global", `(module (import "m" "g" (global (mut i32))) (memory 1))`, "imports a global"},
		{"reserved export", `(module (memory 1) (func (export "toolshed.global.x")))`, "exports a name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := split(t, wasmbuild.WAT(t, []byte(c.wat)), 64)
			if !errors.Is(err, ErrNotSplittable) || !strings.Contains(err.Error(), c.why) {
				t.Errorf("err = %v, want one that says %q", err, c.why)
			}
		})
	}
}

// A Go reactor: its 38,000 data segments become a handful, and its
// memory is the same byte for byte.
func TestSplitGoModule(t *testing.T) {
	code, err := os.ReadFile(wasmbuild.Build(t, "../../testdata/plugins/benchkit"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := split(t, code, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d segments -> %d, module %d -> %d bytes, %d globals", img.SegmentsBefore, len(img.Segments), len(code), len(img.Module), len(img.Globals))
	if img.SegmentsBefore < 1000 || len(img.Segments) > 10 || len(img.Globals) != 8 {
		t.Errorf("%d segments -> %d, %d globals", img.SegmentsBefore, len(img.Segments), len(img.Globals))
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if _, err := rt.NewHostModuleBuilder("toolshed").
		NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32) int32 { return -1 }).Export("host_call").
		NewFunctionBuilder().WithFunc(func(int32, int32) int32 { return -1 }).Export("host_result").
		Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ := layout(t, rt, code, nil, nil)
	got, _ := layout(t, rt, code, img, nil)
	if !bytes.Equal(got, want) {
		t.Error("the split module's memory differs from the original's")
	}
}

// FuzzSplit: whatever Check accepts, Split neither panics nor returns
// segments outside the memory's minimum or out of order.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01\x0b\x07\x01\x00\x41\x10\x0b\x01x"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01\x06\x06\x01\x7f\x01\x41\x05\x0b\x0b\x0d\x02\x00\x41\x00\x0b\x01a\x00\x41\x02\x0b\x01b"))
	f.Fuzz(func(t *testing.T, code []byte) {
		st, err := Check(code, Limits{})
		if err != nil {
			return
		}
		img, err := Split(code, st, 64)
		if err != nil {
			return
		}
		end := uint64(0)
		for _, s := range img.Segments {
			if uint64(s.Offset) < end || uint64(s.Offset)+uint64(len(s.Data)) > uint64(img.MinPages)<<16 {
				t.Fatalf("segment at %d of %d bytes", s.Offset, len(s.Data))
			}
			end = uint64(s.Offset) + uint64(len(s.Data))
		}
	})
}
