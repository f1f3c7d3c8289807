package wasm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// instantiateWASI instantiates wazero's WASI preview 1 with the functions
// that can wait or cost in proportion to their arguments replaced by ones
// that honour the call's context:
//
//   - poll_oneoff (every sleep: a Go plugin's time.Sleep, its idle
//     scheduler, a raw clock subscription) waits on the context as well as
//     the clock; when the context ends the call ends with it.
//   - random_get fills its buffer a MiB at a time and stops when the
//     context ends.
//
// The others do not block here: stdin is empty (a read returns end of
// file at once), there is no file system, no socket and no environment,
// sched_yield returns at once, and stdout/stderr go to bounded line logs.
//
// record, when not nil, is told what random_get gave which module.
func instantiateWASI(ctx context.Context, rt wazero.Runtime, record func(api.Module, []byte)) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(pollOneoff), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("in", "out", "nsubscriptions", "result.nevents").
		Export("poll_oneoff")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			randomGet(ctx, mod, stack, record)
		}), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("buf", "buf_len").
		Export("random_get")
	_, err := b.Instantiate(ctx)
	return err
}

// WASI preview 1 errno values and event types used here.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoIO      = 29
	errnoNotsup  = 58

	eventClock   = 0
	eventFdRead  = 1
	eventFdWrite = 2
)

// stop ends the plugin's call because its context ended: wazero turns an
// *sys.ExitError raised by a host function into the call's error.
func stop(ctx context.Context) {
	code := uint32(sys.ExitCodeContextCanceled)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = sys.ExitCodeDeadlineExceeded
	}
	panic(sys.NewExitError(code))
}

// pollOneoff implements WASI poll_oneoff: subscriptions of 48 bytes at in,
// events of 32 bytes written at out, their count at nevents. File
// descriptor subscriptions are ready at once (stdin is empty; stdout and
// stderr take any write; other descriptors do not exist). With none of
// those, it waits for the earliest relative clock subscription, or until
// the call's context ends, which ends the call.
func pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	n, nevents := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	stack[0] = pollErrno(ctx, mod, in, out, n, nevents)
}

func pollErrno(ctx context.Context, mod api.Module, in, out, n, nevents uint32) uint64 {
	if n == 0 {
		return errnoInval
	}
	mem := mod.Memory()
	if uint64(n)*48 > uint64(mem.Size()) {
		return errnoFault
	}
	subs, ok1 := mem.Read(in, n*48)
	events, ok2 := mem.Read(out, n*32)
	if !ok1 || !ok2 {
		return errnoFault
	}
	le := binary.LittleEndian
	write := func(k uint32, sub []byte, errno uint16) {
		e := events[k*32 : k*32+32]
		clear(e)
		copy(e[:8], sub[:8]) // userdata
		le.PutUint16(e[8:], errno)
		e[10] = sub[8] // event type
	}
	ready := uint32(0)
	wait := time.Duration(1<<63 - 1)
	clocks := false
	for i := uint32(0); i < n; i++ {
		sub := subs[i*48 : i*48+48]
		switch sub[8] {
		case eventClock:
			if flags := le.Uint16(sub[40:]); flags != 0 {
				// Absolute deadlines (subclockflags 1) are not supported,
				// as in wazero's own implementation.
				return map[bool]uint64{true: errnoNotsup, false: errnoInval}[flags == 1]
			}
			clocks = true
			wait = min(wait, time.Duration(min(le.Uint64(sub[24:]), 1<<63-1)))
		case eventFdRead, eventFdWrite:
			var errno uint16
			switch fd := le.Uint32(sub[16:]); {
			case fd > 2:
				errno = errnoBadf
			case sub[8] == eventFdWrite && fd == 0, sub[8] == eventFdRead && fd > 0:
				errno = errnoNotsup
			}
			// Events are written in order without gaps; the clock
			// subscriptions, not ready, are left out.
			write(ready, sub, errno)
			ready++
		default:
			return errnoInval
		}
	}
	if ready == 0 && clocks {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				stop(ctx)
			}
		} else if ctx.Err() != nil {
			stop(ctx)
		}
		for i := uint32(0); i < n; i++ {
			if sub := subs[i*48 : i*48+48]; time.Duration(min(le.Uint64(sub[24:]), 1<<63-1)) <= wait {
				write(ready, sub, 0)
				ready++
			}
		}
	}
	if !mem.WriteUint32Le(nevents, ready) {
		return errnoFault
	}
	return errnoSuccess
}

// randomGet implements WASI random_get from crypto/rand, a MiB at a time,
// ending the call when its context ends; record (if not nil) is told what
// it gave.
func randomGet(ctx context.Context, mod api.Module, stack []uint64, record func(api.Module, []byte)) {
	buf, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	b, ok := mod.Memory().Read(buf, n)
	if !ok {
		stack[0] = errnoFault
		return
	}
	for len(b) > 0 {
		if ctx.Err() != nil {
			stop(ctx)
		}
		k := min(len(b), 1<<20)
		if _, err := rand.Read(b[:k]); err != nil {
			stack[0] = errnoIO
			return
		}
		if record != nil {
			record(mod, b[:k])
		}
		b = b[k:]
	}
	stack[0] = errnoSuccess
}
