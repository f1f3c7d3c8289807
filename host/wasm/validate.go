package wasm

import "context"

// Instantiate compiles the plugin and makes one instance of it as a call
// would — the start function and the initialiser (_initialize) run, under
// the plugin's timeout — then discards it: what "toolshed plugins validate
// --compile" checks, so that a module that traps at start fails there, not
// at its first call. The error carries the plugin's stderr (explain.go).
// It is safe for concurrent use.
func (p *Plugin) Instantiate(ctx context.Context) error {
	if err := p.Compile(ctx); err != nil {
		return err
	}
	in, err := p.instantiate(ctx)
	if err != nil {
		return err
	}
	in.close(ctx)
	return nil
}
