package gvisor

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Containment of a sandbox beyond its cgroup limits.
//
// Writable layer: runsc's --overlay2=root:dir=<bundle>,size=<N>m puts the
// root's copy-on-write upper layer (a tmpfs inside the Sentry) in a host
// file that runsc creates in the bundle directory and unlinks at once, and
// caps it at N MiB. A sandbox that writes more gets ENOSPC ("No space left
// on device") and keeps running; the file goes away with the sandbox. With
// root:memory instead, written files live in the sandbox's memory, so a
// disk filler ends in an out-of-memory kill of the whole sandbox.
//
// Tasks: the pids cgroup limit counts host tasks, and on systrap every
// process in the sandbox costs about two of them (its stub process and a
// syscall thread), every thread one. When a clone hits pids.max the Sentry
// cannot create the stub and panics, which ends the sandbox. RLIMIT_NPROC,
// which gVisor enforces for every task of a user without CAP_SYS_ADMIN or
// CAP_SYS_RESOURCE (the processes the agent starts have neither; the agent
// has CAP_SYS_RESOURCE only for its own threads), stops a fork bomb first: fork
// fails with EAGAIN inside and the sandbox lives on. The host limit stays as
// the backstop (tasks of several uids each count against their own
// RLIMIT_NPROC).

// minNproc is the smallest RLIMIT_NPROC given to a sandbox.
const minNproc = 16

// overlayFlag is runsc's --overlay2 flag for a sandbox whose bundle is dir.
func overlayFlag(spec runtime.Spec, dir string) string {
	flag := "--overlay2=root:dir=" + dir
	if spec.WritableLayerMB > 0 {
		flag += fmt.Sprintf(",size=%dm", spec.WritableLayerMB)
	}
	return flag
}

// nprocLimit is the RLIMIT_NPROC that keeps a fork bomb's host tasks under
// pidsLimit: a task inside costs up to about 3 host tasks (2.8 measured
// under a shell fork bomb, whose exiting processes linger a moment on the
// host), and the Sentry and gofer need about 25. A quarter leaves margin:
// 248 tasks for the default pids_limit of 1024.
func nprocLimit(pidsLimit int64) uint64 {
	if pidsLimit <= 0 {
		return 0
	}
	return uint64(max(minNproc, (pidsLimit-32)/4))
}

// processLimits are the rlimits of the agent, inherited by everything it
// runs; nil when the spec sets no pids limit.
func processLimits(spec runtime.Spec) []specs.POSIXRlimit {
	n := nprocLimit(spec.PidsLimit)
	if n == 0 {
		return nil
	}
	return []specs.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: n, Soft: n}}
}
