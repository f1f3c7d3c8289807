package main

import (
	"os"
	"path/filepath"

	csdk "github.com/toolshed/toolshed/sdk/c"
)

// cScaffold is a C plugin: paths (NAME is the plugin's name) → templates.
// The C SDK's two files are written beside them (writeCSDK).
var cScaffold = map[string]string{
	"main.c": `/*
 * <<.Name>>: a Toolshed plugin in C (ABI version 1). "make" builds
 * <<.Name>>.wasm with clang and wasi-libc and pins it into <<.Name>>.json.
 * The SDK is toolshed.h and toolshed.c beside this file (docs/SDK.md).
 */
#include "toolshed.h"

static void greet(const ts_args *args, ts_result *result) {
    ts_str name;
    if (ts_arg_string(args, "name", &name) != TS_OK || name.len == 0) {
        /* A tool error: the model reads it and can try again. */
        ts_error(result, "name is empty; give the name to greet");
        return;
    }
    ts_textf(result, "Hello, %.*s!", (int)name.len, name.ptr);
}
TS_TOOL("<<.Tool>>", greet)
`,
	"NAME.json": manifestTemplate,
	"Makefile": `# make: build <<.Name>>.wasm and pin its sha256 into <<.Name>>.json
# make validate: check the folder with serve's rules
# make test: the above, then call the tool through the real host
# Needs clang and wasi-libc (Debian: clang lld wasi-libc libclang-rt-dev-wasm32).
TOOLSHED ?= $(or $(wildcard <<.Toolshed>>),toolshed)
CLANG    ?= clang
AGAINST  ?= bundled
CFLAGS   := --target=wasm32-wasi -O2 -mexec-model=reactor -Wall -Wextra -Wl,--strip-all

all: <<.Name>>.wasm

<<.Name>>.wasm: main.c toolshed.c toolshed.h
	$(CLANG) $(CFLAGS) -o $@ main.c toolshed.c
	$(TOOLSHED) plugins pin <<.Name>>.json

validate: <<.Name>>.wasm
	$(TOOLSHED) plugins validate --compile --against $(AGAINST) .

test: validate
	$(TOOLSHED) call --plugins . <<.Tool>> '{"name": "Toolshed"}' | grep -qx 'Hello, Toolshed!'
	! $(TOOLSHED) call --plugins . <<.Tool>> '{"name": ""}' >/dev/null
	@echo "<<.Name>>: ok"

clean:
	rm -f <<.Name>>.wasm

.PHONY: all validate test clean
`,
}

// writeCSDK writes the C SDK's files into dir.
func writeCSDK(dir string) error {
	for _, name := range []string{"toolshed.h", "toolshed.c"} {
		b, err := csdk.Files.ReadFile("toolshed/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
