package wasm

import (
	"fmt"
	"strings"
)

// Explaining a failed instance. A trap says little: a Go plugin that
// panics or runs out of memory ends in "unreachable", and what happened is
// in what it wrote to stderr just before. So the error of a failed
// instantiation or call carries the tail of the plugin's stderr, and a trap
// of a module that had reached its memory limit (a memory.grow that failed)
// says out of memory.

// explain adds to err what the instance's end tells: out of memory, and
// the tail of its stderr.
func (in *instance) explain(err error) error {
	if err == nil {
		return nil
	}
	tail := in.stderr.Tail()
	oom := strings.Contains(tail, "out of memory")
	if !oom && in.mod != nil && strings.HasPrefix(err.Error(), "trapped") {
		if mem := in.mod.Memory(); mem != nil {
			// A grow of even one page would pass the limit: the module
			// trapped with its memory full.
			oom = uint64(mem.Size())+1<<16 > uint64(in.plugin.pages)<<16
		}
	}
	if oom {
		err = fmt.Errorf("out of memory (the plugin's memory is limited to %d MiB): %w", uint64(in.plugin.pages)>>4, err)
	}
	if tail != "" {
		if len(tail) > 600 {
			tail = "..." + tail[len(tail)-600:]
		}
		err = fmt.Errorf("%w; the plugin's stderr ended with: %s", err, strings.Join(strings.Fields(tail), " "))
	}
	return err
}
