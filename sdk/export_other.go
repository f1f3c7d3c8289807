//go:build !wasip1

package sdk

// Outside WebAssembly there is no host: capability helpers say so.
func hostCall(op string, req []byte) ([]byte, error) { return nil, ErrNotHosted }
