// Package runtimes links in every runtime backend sbx ships; importing it
// registers them with the runtime registry.
package runtimes

import (
	// The gVisor backend (default).
	_ "github.com/sbx-dev/sbx/internal/runtime/gvisor"
)
