//go:build !linux

package wasm

import (
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// snapshotsSupported: restored instances need Linux (memfd and
// copy-on-write mappings); elsewhere every instance is fresh.
const snapshotsSupported = false

type memImage struct{}

func newMemImage([]byte) (*memImage, error) {
	return nil, errors.New("snapshots need Linux")
}

func (*memImage) close() {}

func (*memImage) allocator(*execGate, *memAccount) experimental.MemoryAllocator { return nil }
