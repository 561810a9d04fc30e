// Package runtime defines what an isolation backend must do for hutch: start
// an isolated environment whose PID 1 is hutch-agent (at AgentPath), hand
// back one byte stream to that agent, and destroy the environment without
// leaving anything behind. Exec, files and terminals are agent services, so
// a runtime knows nothing of them. Optional abilities (pause, checkpoint,
// resize, stats) are separate interfaces, summed up once in Abilities; a
// runtime turns an image into the artifact it boots (Prepare). A runtime
// makes no network: the daemon's network service makes a sandbox's and the
// runtime joins it (Spec.Network, network.go). Backends
// register themselves with their own block of the config (Registration,
// Settings); the daemon picks one by name and hands it that block
// (Options.Settings).
package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Spec is everything a runtime needs to start one sandbox.
type Spec struct {
	// ID is the sandbox's UUID; runtimes use it to name their resources.
	ID string
	// Image is what Prepare made of the sandbox's image (for gVisor, its
	// root filesystem directory). It is shared by every sandbox of the
	// image and must never be written to.
	Image Artifact
	// AgentPath is the host path of the hutch-agent binary to run as PID 1.
	AgentPath string
	// CPUs is the CPU limit in whole cores.
	CPUs uint32
	// MemoryMB is the memory limit in MiB, for everything in the sandbox.
	MemoryMB uint32
	// PidsLimit caps the number of tasks in the sandbox.
	PidsLimit int64
	// WritableLayerMB caps what the sandbox can write to its root
	// filesystem (ENOSPC inside past it); 0 leaves it unbounded.
	WritableLayerMB uint64
	// Network, when set, is the network the sandbox joins (network.go);
	// nil leaves it loopback only.
	Network *NetworkAttachment
	// Hostname is the sandbox's host name.
	Hostname string
	// UpperLayer, when set, is a writable layer a LayerCapturer captured
	// (a tar file): the sandbox's root filesystem starts with its changes.
	// A directory instead is that layer unpacked (layertree.Unpack), which
	// the sandbox shares read-only under its own writable layer (issue 39).
	UpperLayer string
	// Mounts are host directories the sandbox sees at paths of its own
	// (bind mounts), in order.
	Mounts []Mount
	// Reattach makes the sandbox outlive the process that started it: a
	// later one takes it over with an Adopter (issue 35). A runtime that
	// cannot ignores it.
	Reattach bool
}

// Mount is a host directory a sandbox sees at a path of its own. Writes
// through it reach the host directory, and sandboxes that mount one
// directory see each other's writes.
type Mount struct {
	// Source is the host directory.
	Source string
	// Destination is where the sandbox sees it: an absolute, clean path
	// that is not the root.
	Destination string
	// ReadOnly refuses writes (EROFS inside).
	ReadOnly bool
}

// Instance is one running sandbox.
type Instance interface {
	// Conn is the byte stream to the agent (the agent's stdin and stdout).
	Conn() io.ReadWriteCloser
	// Done is closed once the sandbox has ended, for whatever reason.
	Done() <-chan struct{}
	// Exit says why the sandbox ended on its own (CauseOutOfMemory, "out of
	// memory (limit 256 MiB)"); it is the zero End before Done is closed
	// and after an ordinary Destroy.
	Exit() End
	// StderrTail returns the last few KiB the runtime and agent wrote to stderr.
	StderrTail() string
	// Destroy ends the sandbox and frees every resource it held: processes,
	// mounts, cgroups and directories, and its hold on its network's
	// namespace (which the network service then tears down). It is
	// idempotent.
	Destroy(ctx context.Context) error
}

// Runtime starts and reaps sandboxes of one isolation technology.
type Runtime interface {
	// Name is the runtime's registry name ("gvisor").
	Name() string
	// Start boots a sandbox; on error it leaves nothing behind.
	Start(ctx context.Context, spec Spec) (Instance, error)
	// Reconcile destroys every sandbox of this runtime, and every leftover
	// resource (mount, cgroup, directory) of one, whose ID keep rejects.
	// It returns the IDs it destroyed.
	Reconcile(ctx context.Context, keep func(id string) bool) ([]string, error)
}

// SlowBooter is a runtime whose boots may need longer than the daemon's
// boot timeout (a microVM under TCG emulation): BootTimeout is the least
// a boot of it is given.
type SlowBooter interface {
	BootTimeout() time.Duration
}

// BootTimeoutOf is rt's BootTimeout when it is a SlowBooter, else 0.
func BootTimeoutOf(rt Runtime) time.Duration {
	if s, ok := rt.(SlowBooter); ok {
		return s.BootTimeout()
	}
	return 0
}

// Factory builds a runtime from its options, checking the host first.
type Factory func(opts Options) (Runtime, error)

// Options are what the daemon hands a runtime's Factory: the host-level
// settings every runtime may use, and the runtime's own block of the config.
type Options struct {
	// StateDir is a directory the runtime owns for its per-sandbox state.
	StateDir string
	// Settings is the runtime's own block of the config (runtimes.<name>),
	// its defaults filled in, as JSON; the Factory decodes it into its own
	// type with DecodeSettings. JSON, so that the crash watchdog can be
	// handed the same Options over a pipe.
	Settings json.RawMessage `json:",omitempty"`
	// Logger is the daemon's logger, for what a runtime reports at start;
	// nil is slog.Default(). It does not cross the watchdog's pipe.
	Logger *slog.Logger `json:"-"`
}

// Registration is what a backend registers: its name, its Factory and
// its own block of the config.
type Registration struct {
	// Name is the runtime's registry name, and the key of its block in
	// the config (runtimes.<name>).
	Name string
	// New builds the runtime.
	New Factory
	// Settings returns a new value of the backend's block (a pointer to
	// a struct whose yaml and json tags name its keys) holding its
	// defaults; nil for a backend without a block (settings.go).
	Settings func() Settings
}

var (
	registryMu sync.Mutex
	// registry is guarded by registryMu.
	registry = map[string]Registration{}
)

// Register makes a runtime available by name; backends call it from init.
func Register(r Registration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[r.Name]; dup {
		panic("runtime: duplicate registration of " + r.Name)
	}
	if r.New == nil {
		panic("runtime: registration of " + r.Name + " has no Factory")
	}
	registry[r.Name] = r
}

// lookup is the registration of runtime name.
func lookup(name string) (Registration, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	r, ok := registry[name]
	return r, ok
}

// New builds the named runtime.
func New(name string, opts Options) (Runtime, error) {
	r, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown runtime %q (have %v)", name, Names())
	}
	return r.New(opts)
}

// Names lists the registered runtimes, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
