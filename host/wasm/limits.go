package wasm

import (
	"log/slog"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/host/wasm/internal/wasmcheck"
)

// Caps are the operator's ceilings. A manifest gets what it asks for up to
// the ceiling; asking more gets the ceiling and a logged warning. A zero
// field means the default ceiling below, never "no ceiling". Negative
// values are treated as zero.
//
// The quotas (log, artifacts) are not in manifests: the ceiling is the
// quota. Each is per call; a session's instance of a plugin may use
// SessionQuotaCalls times as much over its life.
type Caps struct {
	// Timeout bounds one call, and separately the instantiation of an
	// instance (start function and _initialize). Default 60 s.
	Timeout time.Duration
	// MaxMemoryMB bounds an instance's linear memory, in MiB. Default 256.
	MaxMemoryMB int
	// MaxOutputKB bounds a call's result, in KiB. Default 4096.
	MaxOutputKB int
	// MaxLogKB bounds the bytes of messages a call may send to the log
	// capability, in KiB. Default 64.
	MaxLogKB int
	// MaxLogLines bounds the messages a call may send to the log
	// capability. Default 1000.
	MaxLogLines int
	// MaxArtifacts bounds the artifacts a call may store. Default 8.
	MaxArtifacts int
	// MaxArtifactMB bounds the bytes of the artifacts a call stores, all
	// of them together, in MiB. Default 32 (and one artifact is never
	// over 16 MiB).
	MaxArtifactMB int
	// MaxModuleMB bounds a plugin's .wasm module, in MiB. Default 32.
	MaxModuleMB int
	// CompileTimeout bounds one compilation. Default 30 s.
	CompileTimeout time.Duration
}

// Default ceilings (Caps' zero values).
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxMemoryMB    = 256
	DefaultMaxOutputKB    = 4096
	DefaultMaxLogKB       = 64
	DefaultMaxLogLines    = 1000
	DefaultMaxArtifacts   = 8
	DefaultMaxArtifactMB  = 32
	DefaultMaxModuleMB    = 32
	DefaultCompileTimeout = 30 * time.Second
)

// SessionQuotaCalls is how many calls' worth of log and artifact quota
// one instance (one session's use of one plugin) gets over its life.
const SessionQuotaCalls = 4

// withDefaults returns c with every zero (or negative) field set to its
// default ceiling.
func (c Caps) withDefaults() Caps {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.CompileTimeout <= 0 {
		c.CompileTimeout = DefaultCompileTimeout
	}
	def(&c.MaxMemoryMB, DefaultMaxMemoryMB)
	def(&c.MaxOutputKB, DefaultMaxOutputKB)
	def(&c.MaxLogKB, DefaultMaxLogKB)
	def(&c.MaxLogLines, DefaultMaxLogLines)
	def(&c.MaxArtifacts, DefaultMaxArtifacts)
	def(&c.MaxArtifactMB, DefaultMaxArtifactMB)
	def(&c.MaxModuleMB, DefaultMaxModuleMB)
	return c
}

// Compile budget: what one module may ask of the compiler, checked on the
// binary before wazero sees it. The bundled Go plugins (make plugins, Go
// 1.25) measure at most: module 3.9 MB, 2,391 functions, largest body
// 29,238 bytes, 20 locals, nesting 549, tables 6,487 elements. The limits
// leave a wide margin (×9 on body size, ×3.7 on nesting, ×20 on
// functions) and stay far below what stalls the compiler (a 12 MB
// function, 100,000 nested blocks).
const (
	maxFunctions     = 50_000
	maxFunctionBytes = 256 << 10
	maxLocals        = 10_000
	maxNesting       = 2048
	// maxTableElements bounds all tables of a module together: 8 bytes
	// an element on the host, so at most 8 MiB per instance.
	maxTableElements = 1 << 20
	// maxConcurrentCompiles is the least number of compiles that may
	// run at once; the host allows GOMAXPROCS when that is more.
	maxConcurrentCompiles = 2
)

func (c Caps) budget() wasmcheck.Limits {
	return wasmcheck.Limits{ModuleBytes: c.MaxModuleMB << 20, Functions: maxFunctions,
		FunctionBytes: maxFunctionBytes, Locals: maxLocals, Nesting: maxNesting, TableElements: maxTableElements}
}

// limits are one plugin's effective limits.
type limits struct {
	timeout     time.Duration
	memory      int64 // bytes
	output      int64 // bytes
	logBytes    int64 // per call
	logLines    int
	artifacts   int
	artifactMax int64 // bytes per call
}

// resolve applies the ceilings to a manifest's limits, warning for each
// one the manifest asked above its ceiling.
func resolve(c Caps, m *manifest.Manifest, log *slog.Logger) limits {
	c = c.withDefaults()
	l := limits{timeout: m.Limits.Timeout(), memory: m.Limits.MemoryBytes(), output: m.Limits.OutputBytes(),
		logBytes: int64(c.MaxLogKB) << 10, logLines: c.MaxLogLines,
		artifacts: c.MaxArtifacts, artifactMax: int64(c.MaxArtifactMB) << 20}
	clamp := func(name string, v *int64, ceiling int64, unit string) {
		if *v > ceiling {
			log.Warn("manifest asks more than the operator's ceiling; the ceiling applies",
				"plugin", m.Name, "limit", name, "asked", *v, "ceiling", ceiling, "unit", unit)
			*v = ceiling
		}
	}
	ms := int64(l.timeout / time.Millisecond)
	clamp("timeout_ms", &ms, int64(c.Timeout/time.Millisecond), "ms")
	l.timeout = time.Duration(ms) * time.Millisecond
	mb, kb := l.memory>>20, l.output>>10
	clamp("max_memory_mb", &mb, int64(c.MaxMemoryMB), "MiB")
	clamp("max_output_kb", &kb, int64(c.MaxOutputKB), "KiB")
	l.memory, l.output = mb<<20, kb<<10
	return l
}
