package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidateStartPanic (issue 25): a module that panics at start — a Go
// plugin registering a tool twice does — passes plain validation (its
// exports are right) but fails validate --compile, with the panic's
// message from its stderr; toolshed call shows the same.
func TestValidateStartPanic(t *testing.T) {
	e := newHostileEnv(t, "")
	msg := `panic: sdk: tool "greet" registered twice` + "\n"
	module := wat(t, abiWAT(`(import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))`,
		`(memory (export "memory") 1)`, okResult, fmt.Sprintf(`(data (i32.const 8192) "\00\21\00\00\%02x\00\00\00")
  (data (i32.const 8448) %s)
  (func $start (drop (call $w (i32.const 2) (i32.const 8192) (i32.const 1) (i32.const 8300))) (unreachable))
  (start $start)`, len(msg), watString(msg))))
	e.plugin("twice.json", "twice", module, nil, nil, "greet")
	if code, out, errs := runCLI("plugins", "validate", e.plugins); code != 0 {
		t.Fatalf("plain validate: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI("plugins", "validate", "--compile", e.plugins)
	if code != 1 || !strings.Contains(out, "FAILED  "+e.plugins) || !strings.Contains(out, `stderr ended with: panic: sdk: tool "greet" registered twice`) {
		t.Fatalf("validate --compile: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--plugins", e.plugins, "greet", "{}")
	if code != 1 || !strings.Contains(errs, "registered twice") {
		t.Fatalf("call: exit %d\n%s%s", code, out, errs)
	}
}

// TestValidateAgainst: --against DIR reports a tool whose name clashes
// with a tool of another plugin of the folder the plugin will join; the
// plugin's own earlier version there is not a clash.
func TestValidateAgainst(t *testing.T) {
	e := newHostileEnv(t, "")
	module := wat(t, abiWAT("", `(memory (export "memory") 1)`, okResult, ""))
	e.plugin("mine.json", "mine", module, nil, nil, "get_current_weather", "myOwnTool")
	if code, out, errs := runCLI("plugins", "validate", e.plugins); code != 0 {
		t.Fatalf("alone: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI("plugins", "validate", "--against", bundled, e.plugins)
	if code != 1 || !strings.Contains(out, `tool "get_current_weather" clashes with tool "getCurrentWeather" of plugin "weather"`) ||
		strings.Contains(out, "myOwnTool") {
		t.Fatalf("--against: exit %d\n%s%s", code, out, errs)
	}
	// An update of a plugin already there clashes with nothing of its own.
	other := newHostileEnv(t, "")
	other.plugin("weather.json", "weather", module, nil, nil, "getCurrentWeather", "getWeatherForecast")
	if code, out, errs := runCLI("plugins", "validate", "--against", bundled, other.plugins); code != 0 {
		t.Fatalf("an update: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI("plugins", "validate", "--against", e.root+"/none", e.plugins); code != 1 || !strings.Contains(errs, "--against") {
		t.Fatalf("a missing folder: exit %d %s", code, errs)
	}
}
