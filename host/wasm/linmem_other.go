//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is nil off Linux: wazero's own allocation (growth by
// copying, up to a few times the memory cap while the old array awaits
// the garbage collector; Go arrays need no execGate). The plugin memory
// budget then counts what instances are made with, not their growth.
func memoryAllocator(*execGate, *memAccount) experimental.MemoryAllocator { return nil }

// growthAccounted: wazero's own allocation is not charged to the memory
// budget as it grows; what an instance starts with is charged until it
// is closed.
const growthAccounted = false
