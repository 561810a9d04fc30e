package gvisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// settings decodes the runtime's block of the config (runtimes.gvisor)
// over its defaults; an unknown field is an error.
func settings(raw json.RawMessage) (config.GVisor, error) {
	s := config.Default().Runtimes.GVisor
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("runtimes.gvisor: %w", err)
	}
	c := config.Default()
	c.Runtimes.GVisor = s
	if err := c.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// findRunsc resolves the runsc binary: runtimes.gvisor.runsc_path, else
// next to the hutch binary, else on PATH.
func findRunsc(path string) (string, error) {
	p, err := runtime.FindBinary(path, "runsc")
	if errors.Is(err, runtime.ErrBinaryNotFound) {
		return "", fmt.Errorf("%w (build it with `make build`, or set runtimes.gvisor.runsc_path)", err)
	}
	return p, err
}
