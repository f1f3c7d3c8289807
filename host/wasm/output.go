package wasm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/sdk/abi"
)

// outputSchemas are a plugin's tools' outputSchemas, compiled on first
// use. Safe for concurrent use.
type outputSchemas struct {
	mu sync.Mutex
	m  map[string]*jsonschema.Schema
}

// checkOutput holds a successful result to the tool's outputSchema, when
// it declares one: MCP clients may rely on the shape of structured
// content. The error, if any, is for the model (the call becomes a tool
// error); a plugin that breaks its own schema is also logged.
func (p *Plugin) checkOutput(spec manifest.Tool, res abi.Result) error {
	if res.IsError || len(spec.OutputSchema) == 0 {
		return nil
	}
	p.outputs.mu.Lock()
	sch, ok := p.outputs.m[spec.Name]
	if !ok {
		var err error
		if sch, err = manifest.CompileSchema(spec.OutputSchema); err != nil {
			p.outputs.mu.Unlock()
			return fmt.Errorf("tool %q: its outputSchema does not compile: %v", spec.Name, err)
		}
		if p.outputs.m == nil {
			p.outputs.m = map[string]*jsonschema.Schema{}
		}
		p.outputs.m[spec.Name] = sch
	}
	p.outputs.mu.Unlock()
	if len(res.Structured) == 0 {
		return fmt.Errorf("tool %q declares an outputSchema but returned no structured result", spec.Name)
	}
	v, err := decodeArgs(res.Structured)
	if err == nil {
		err = sch.Validate(v)
	}
	if err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		p.host.log.Warn("plugin result does not match its outputSchema", "plugin", p.name, "tool", spec.Name, "error", msg)
		return fmt.Errorf("tool %q returned a structured result that does not match its outputSchema: %s", spec.Name, msg)
	}
	return nil
}
