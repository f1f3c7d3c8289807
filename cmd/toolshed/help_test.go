package main

import (
	"strings"
	"testing"
)

// TestHelpFlags: every command and subcommand answers -h with its usage
// line and its flags, and exits 0; a flag it does not take is a usage
// mistake (exit 2) that shows the usage.
func TestHelpFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"search", "-h"}, {"plugins", "-h"}, {"plugins", "--help"}, {"plugins", "help"},
		{"plugins", "list", "-h"}, {"plugins", "validate", "-h"}, {"plugins", "pin", "-h"}, {"plugins", "new", "-h"},
		{"eval", "-h"}, {"call", "-h"}, {"run", "-h"}, {"chat", "-h"}, {"serve", "-h"}, {"mcp", "-h"}, {"config", "print", "-h"},
	} {
		code, out, errs := runCLI(args...)
		if code != 0 || !strings.Contains(out+errs, "usage") && !strings.Contains(out+errs, "Usage") {
			t.Errorf("%v: exit %d, no usage:\n%s%s", args, code, out, errs)
		}
		if len(args) > 1 && args[len(args)-1] == "-h" && !strings.Contains(out+errs, "  -") && args[0] != "plugins" {
			t.Errorf("%v: no flags listed:\n%s%s", args, out, errs)
		}
	}
	for _, args := range [][]string{{"plugins", "validate", "--nope", "x"}, {"chat", "--nope"}, {"eval", "--nope"}, {"plugins", "nope"}} {
		code, _, errs := runCLI(args...)
		if code != 2 || !strings.Contains(errs, "usage:") {
			t.Errorf("%v: exit %d, want 2 with the usage:\n%s", args, code, errs)
		}
	}
	// validate takes the folder as an argument or as --plugins.
	if code, out, errs := runCLI("plugins", "validate", "--plugins", t.TempDir()); code != 1 || !strings.Contains(errs, "no manifest") {
		t.Errorf("validate --plugins: exit %d %s%s", code, out, errs)
	}
}
