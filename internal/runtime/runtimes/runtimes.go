// Package runtimes links in every runtime backend hutch ships; importing it
// registers them with the runtime registry.
package runtimes

import (
	// The gVisor backend (default).
	_ "github.com/hutch-dev/hutch/internal/runtime/gvisor"
	// The QEMU microVM backend (runtime: microvm).
	_ "github.com/hutch-dev/hutch/internal/runtime/microvm"
)
