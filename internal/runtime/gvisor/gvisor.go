// Package gvisor runs sandboxes with gVisor's runsc on the systrap platform.
//
// Each sandbox is an OCI bundle under <StateDir>/sandboxes/<id>/ whose
// rootfs is a read-only bind mount of the shared image; runsc's
// --overlay2=root:dir=<bundle>,size=<N>m gives the sandbox a private,
// size-bounded copy-on-write root, kept in an unlinked file that is
// discarded when it stops, so nothing a sandbox does reaches the image
// (see limits.go for this and the task limit). The agent binary is bind-mounted read-only at
// runtime.AgentPath and runs as the container's init; its stdin and stdout
// are two pipes whose other ends are the byte stream Instance.Conn returns.
// Limits (memory without swap, CPU quota, pids) are cgroup resources that
// runsc installs at hutch/<id> in every cgroup hierarchy (v1 or v2).
//
// Sandboxes are started with "runsc run --detach": once started, the only
// host processes of a sandbox are runsc's sandbox (the Sentry) and gofer;
// hutch keeps no process of its own per sandbox. The end of a sandbox is seen
// as EOF on the agent's stdout.
//
// Networking: runsc runs with --network=none (loopback only) unless the
// spec asks for a network, then with --network=sandbox in the network
// namespace the daemon's network service made for it (see network.go).
//
// Everything a sandbox owns on the host is named by its id: the runsc state
// under <StateDir>/runsc, the bundle directory (created first and removed
// last, so it marks a sandbox that is not fully gone), the rootfs mount and
// the cgroups. Reconcile finds them again after a crash of the daemon.
// runsc also pins one empty network namespace for all gofers at
// <StateDir>/runsc/null-netns (a bind mount); it is unmounted whenever the
// last sandbox of the Runtime is gone.
package gvisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Name is the runtime's registry name.
const Name = "gvisor"

func init() {
	runtime.Register(runtime.Registration{Name: Name, New: New,
		Settings: func() runtime.Settings { return DefaultSettings() }})
}

var (
	_ runtime.Runtime         = (*Runtime)(nil)
	_ runtime.AbilityReporter = (*Runtime)(nil)
	_ runtime.Describer       = (*Runtime)(nil)
)

// validID matches the sandbox ids this runtime accepts: they name
// directories, cgroups and runsc containers.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// Runtime starts sandboxes with runsc. It is safe for concurrent use.
type Runtime struct {
	runsc    string // runsc binary, absolute
	stateDir string // absolute
	// settings are the runtime's block of the config (runtimes.gvisor).
	settings Settings
	cg       cgroups.Layout

	mu sync.Mutex
	// live maps the ids of sandboxes this Runtime started and has not yet
	// destroyed to their instance; nil while a Start is in progress. It is
	// guarded by mu.
	live map[string]*instance
	// ahead holds containers created ahead for restores (ahead.go).
	ahead ahead // issue 46
}

// New checks the host (runsc binary, root, cgroups) and prepares
// opts.StateDir. opts.Settings is the config's runtimes.gvisor block; runsc
// is looked for here, so only a daemon that uses gVisor needs it.
func New(opts runtime.Options) (runtime.Runtime, error) {
	return newRuntime(opts)
}

func newRuntime(opts runtime.Options) (*Runtime, error) {
	if opts.StateDir == "" {
		return nil, errors.New("gvisor runtime: no state directory configured")
	}
	stateDir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("gvisor runtime: state directory: %w", err)
	}
	set, err := settings(opts.Settings)
	if err != nil {
		return nil, fmt.Errorf("gvisor runtime: %w", err)
	}
	runsc, err := findRunsc(set.RunscPath)
	if err != nil {
		return nil, fmt.Errorf("gvisor runtime: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("gvisor runtime: must run as root (runsc needs it for namespaces, mounts and cgroups)")
	}
	cg, err := cgroups.Detect(cgroups.DefaultRoot)
	if err != nil {
		return nil, fmt.Errorf("gvisor runtime: %w", err)
	}
	r := &Runtime{
		runsc:    runsc,
		stateDir: stateDir,
		settings: set,
		cg:       cg,
		live:     map[string]*instance{},
	}
	r.ahead.init(set, opts.Logger) // issue 46
	for _, dir := range []string{r.sandboxesDir(), r.runscRoot()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("gvisor runtime: creating state directory: %w", err)
		}
	}
	return r, nil
}

// Name returns "gvisor".
func (r *Runtime) Name() string { return Name }

// Mode is runsc's platform ("systrap"), for runtime.Describer.
func (r *Runtime) Mode() string { return r.settings.Platform }

// Abilities are what instances of this runtime can do beyond the contract.
func (r *Runtime) Abilities() runtime.Abilities {
	a := runtime.Discover(r, (*instance)(nil))
	a.Mounts = true
	return a
}

// sandboxesDir holds one bundle directory per sandbox.
func (r *Runtime) sandboxesDir() string { return filepath.Join(r.stateDir, "sandboxes") }

// sandboxDir is the bundle directory of sandbox id.
func (r *Runtime) sandboxDir(id string) string { return filepath.Join(r.sandboxesDir(), id) }

// runscRoot is runsc's --root: its state files for every sandbox.
func (r *Runtime) runscRoot() string { return filepath.Join(r.stateDir, "runsc") }

// logDir keeps runsc's debug logs of sandbox id (Debug only); it outlives
// the sandbox so that a failure can be read afterwards.
func (r *Runtime) logDir(id string) string { return filepath.Join(r.stateDir, "logs", id) }

// runscArgs returns runsc's global flags followed by args. With Debug,
// runsc's debug logs of every command go to logDir(id).
func (r *Runtime) runscArgs(id string, args ...string) []string {
	global := []string{"--root", r.runscRoot()}
	if r.settings.Debug && id != "" {
		global = append(global, "--debug", "--debug-log", r.logDir(id)+"/")
	}
	return append(global, args...)
}

// runscCmd builds a runsc command for sandbox id.
func (r *Runtime) runscCmd(ctx context.Context, id string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.runsc, r.runscArgs(id, args...)...)
	cmd.Env = os.Environ()
	return cmd
}

// runscOutput runs a short runsc command and returns its stdout; an error
// carries the last lines of its stderr.
func (r *Runtime) runscOutput(ctx context.Context, id string, args ...string) ([]byte, error) {
	cmd := r.runscCmd(ctx, id, args...)
	stderr := runtime.NewTailBuffer(4 << 10)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("runsc %s: %w: %s", args[0], err, runtime.LastLines(stderr.String(), 3, 512))
	}
	return out, nil
}

// checkID rejects ids that cannot safely name a directory or cgroup.
func checkID(id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("invalid sandbox id %q", id)
	}
	return nil
}

// Close destroys the containers created ahead for restores, which it
// makes no more of (ahead.go), and releases what runsc shares between this
// runtime's sandboxes (see releaseSharedLocked). Running sandboxes are not
// affected, and a later Start pins a new one. Close does not destroy
// sandboxes; use Reconcile for that. The Runtime stays usable.
func (r *Runtime) Close() error {
	r.closeAhead() // issue 46
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releaseSharedLocked()
}

// releaseSharedLocked unmounts the empty network namespace that runsc pins
// at <StateDir>/runsc/null-netns for its gofers, so that no mount is left
// once no sandbox runs (and StateDir can be removed). It is called when the
// last sandbox of this Runtime goes, by Reconcile when none is left, and by
// Close. r.mu must be held, so that no Start of this Runtime is under way.
func (r *Runtime) releaseSharedLocked() error {
	path := filepath.Join(r.runscRoot(), "null-netns")
	// Concurrent first starts may have stacked several mounts there.
	for unix.Unmount(path, unix.MNT_DETACH) == nil {
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing runsc's null network namespace: %w", err)
	}
	return nil
}
