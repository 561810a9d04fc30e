package sandbox

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// spawnRefused turns the agent's refusal to start a process for want of
// resources into S400, or returns nil for any other error. Inside the
// sandbox, fork or clone failed with EAGAIN or ENOMEM: its task limit
// (RLIMIT_NPROC, derived from pids_limit) or its memory is used up, by a
// fork bomb say. The agent answered, so the sandbox is sound and stays up;
// the caller may retry once processes have ended.
func spawnRefused(id string, err error) error {
	if status.Code(err) != codes.ResourceExhausted {
		return nil
	}
	return errdefs.New(errdefs.CodeCapacity, "sandbox %s cannot start another process: %s (its process or memory limit is used up)", id, status.Convert(err).Message()).
		WithFix(nil, "wait for processes in the sandbox to end, kill some, or stop the sandbox")
}
