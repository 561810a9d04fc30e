package agent

// Filesystem calls as the image's user. The host names the user in the
// metadata of every Fs call (agentv1.FsUserKey); the agent then runs the
// whole call on one locked OS thread whose effective uid, gid and groups
// are that user's, so the kernel (gVisor's Sentry) makes every permission
// check, symlink resolution included, exactly as for the user's own
// processes, and new files belong to the user.
//
// Credentials are per thread on Linux and in gVisor. The raw setresuid,
// setresgid and setgroups system calls below change only the calling
// thread (Go's syscall.Setuid and friends change every thread of the
// process). gVisor does not implement setfsuid (ENOSYS), so the effective
// ids are switched; the real and saved uid stay 0, so the agent can switch
// back, and the user's processes can neither signal nor trace the thread.
// A locked thread never lends itself to other goroutines, and the Go
// runtime creates new threads from a clean template thread when the
// current one is locked, so no other code runs with these credentials.

import (
	"context"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// fsUserOf returns the user an Fs call runs as, nil for the agent itself.
func fsUserOf(ctx context.Context, method string) (*agentv1.FsUser, error) {
	if !agentv1.IsFsMethod(method) {
		return nil, nil
	}
	vals := metadata.ValueFromIncomingContext(ctx, agentv1.FsUserKey)
	switch len(vals) {
	case 0:
		return nil, nil
	case 1:
		u, err := agentv1.ParseFsUser(vals[0])
		if err != nil {
			return nil, fault(kindInvalid, "", "%v", err)
		}
		return u, nil
	}
	return nil, fault(kindInvalid, "", "fs user given %d times", len(vals))
}

// creds are the ids a thread's filesystem permissions are checked with.
type creds struct {
	uid, gid uint32
	groups   []uint32
}

// asUser runs fn on the calling goroutine's thread with the effective
// credentials of u. When the thread cannot be given back the agent's own
// credentials it stays locked, so the runtime ends it with the goroutine.
func asUser(u *agentv1.FsUser, fn func() error) error {
	runtime.LockOSThread()
	groups, err := unix.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return fault(kindIO, "", "reading the agent's groups: %v", err)
	}
	own := creds{uint32(unix.Geteuid()), uint32(unix.Getegid()), make([]uint32, len(groups))}
	for i, g := range groups {
		own.groups[i] = uint32(g)
	}
	restore := func() {
		if leave(own) == nil {
			runtime.UnlockOSThread()
		}
	}
	if err := enter(creds{u.UID, u.GID, u.Groups}); err != nil {
		restore()
		return fault(kindIO, "", "acting as uid %d gid %d: %v", u.UID, u.GID, err)
	}
	defer restore()
	return fn()
}

// enter gives the calling thread the effective ids of c: groups and gid
// first, while the thread still has CAP_SETGID, the uid last.
func enter(c creds) error {
	if err := setgroups(c.groups); err != nil {
		return err
	}
	if err := setresgid(c.gid); err != nil {
		return err
	}
	return setresuid(c.uid)
}

// leave gives the calling thread back the agent's ids c: the uid first, to
// regain the capabilities the rest needs.
func leave(c creds) error {
	if err := setresuid(c.uid); err != nil {
		return err
	}
	if err := setresgid(c.gid); err != nil {
		return err
	}
	return setgroups(c.groups)
}

// setresuid sets the calling thread's effective uid only; the real and
// saved uids stay the agent's.
func setresuid(uid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
		return e
	}
	return nil
}

// setresgid sets the calling thread's effective gid only.
func setresgid(gid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
		return e
	}
	return nil
}

// keep is the -1 of setresuid and setresgid: leave that id as it is.
const keep = ^uintptr(0)

// setgroups sets the calling thread's supplementary groups.
func setgroups(groups []uint32) error {
	var p *uint32
	if len(groups) > 0 {
		p = &groups[0]
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(p)), 0); e != 0 {
		return e
	}
	return nil
}

// fsUserUnary runs a unary Fs call as the user its metadata names.
func fsUserUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	u, err := fsUserOf(ctx, info.FullMethod)
	if err != nil {
		return nil, asStatus(ctx, "", "", err)
	}
	if u == nil {
		return handler(ctx, req)
	}
	var resp any
	err = asUser(u, func() error {
		resp, err = handler(ctx, req)
		return err
	})
	return resp, err
}

// fsUserStream runs a streamed Fs call as the user its metadata names.
func fsUserStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	u, err := fsUserOf(ss.Context(), info.FullMethod)
	if err != nil {
		return asStatus(ss.Context(), "", "", err)
	}
	if u == nil {
		return handler(srv, ss)
	}
	return asUser(u, func() error { return handler(srv, ss) })
}
