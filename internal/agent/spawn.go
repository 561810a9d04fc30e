package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

const (
	// DefaultMaxOutputBytes is the per-stream capture cap of an exec that
	// leaves max_output_bytes at 0 (agentclient always sets it).
	DefaultMaxOutputBytes = agentv1.DefaultMaxOutputBytes
	// MaxOutputBytes is the largest per-stream cap the agent grants; larger
	// requests are lowered to it.
	MaxOutputBytes = agentv1.MaxOutputBytes

	// pipeGrace is how long output is still read into the rings after the
	// process exited, for children that inherited its stdout or stderr and
	// keep it open; after it, what they write is read and dropped.
	pipeGrace = 200 * time.Millisecond
	// readChunk is the size of one read from an output pipe: a pipe's
	// whole buffer (outputPipeBytes), so that fast output costs few reads
	// across the sandbox's wall (issue 46: 5).
	readChunk = outputPipeBytes
	// firstReadChunk is the size of a process's first reads.
	firstReadChunk = 32 << 10
	// outputPipeBytes is the buffer size of a process's output pipes.
	outputPipeBytes = 256 << 10
	// cutReadMax bounds what is read of an output after the cut: a pipe's
	// largest buffer (Linux's default fs.pipe-max-size).
	cutReadMax = 1 << 20
)

// checkStart validates req and returns the directory to run it in.
func checkStart(req *agentv1.StartRequest) (string, error) {
	if n := req.GetRingBytes(); n < 0 {
		return "", fmt.Errorf("ring_bytes %d is negative", n)
	}
	if sz := req.GetPty(); sz != nil && (sz.GetRows() > 0xffff || sz.GetCols() > 0xffff) {
		return "", fmt.Errorf("pty size %dx%d is too large", sz.GetRows(), sz.GetCols())
	}
	return checkExec(req.GetExec())
}

// checkExec validates req and returns the directory to run it in.
func checkExec(req *agentv1.ExecRequest) (string, error) {
	argv := req.GetArgv()
	if len(argv) == 0 || argv[0] == "" {
		return "", errors.New("argv is empty")
	}
	for _, l := range [][]string{argv, req.GetEnv()} {
		for _, s := range l {
			if strings.IndexByte(s, 0) >= 0 {
				return "", fmt.Errorf("argument or environment entry %q contains a NUL byte", s)
			}
		}
	}
	if req.GetTimeoutMs() < 0 {
		return "", fmt.Errorf("timeout_ms %d is negative", req.GetTimeoutMs())
	}
	if req.GetMaxOutputBytes() < 0 {
		return "", fmt.Errorf("max_output_bytes %d is negative", req.GetMaxOutputBytes())
	}
	dir := req.GetWorkdir()
	if dir == "" {
		dir = "/"
	}
	dir, ok := homeDir(req, dir)
	if !ok {
		return "", fmt.Errorf("workdir %s: the user's home directory is unknown", req.GetWorkdir())
	}
	if !filepath.IsAbs(dir) || strings.IndexByte(dir, 0) >= 0 {
		return "", fmt.Errorf("workdir %q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("workdir %s: %s", dir, errnoText(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workdir %s: not a directory", dir)
	}
	return dir, nil
}

// spawnFailure sorts out why a spawn failed: a command that cannot be run
// (126, 127) is a lookupError, no resources is ResourceExhausted, anything
// else Internal.
func spawnFailure(cmd string, err error) (*lookupError, error) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil, status.Errorf(codes.Internal, "starting %s: %v", cmd, err)
	}
	switch errno {
	case syscall.EAGAIN, syscall.ENOMEM:
		return nil, status.Errorf(codes.ResourceExhausted, "starting %s: %v", cmd, errno)
	case syscall.ENOENT:
		// The file exists (lookPath saw it): a missing #! interpreter.
		return &lookupError{code: exitNotFound, reason: errno.Error()}, nil
	}
	return &lookupError{code: exitNotExecutable, reason: errno.Error()}, nil
}

// failureEvents are the events of a command that could not be run: its
// reason on stderr, then its exit status.
func failureEvents(cmd string, e *lookupError) []*agentv1.ProcessEvent {
	msg := []byte("exec: " + cmd + ": " + e.reason + "\n")
	return []*agentv1.ProcessEvent{
		{Event: &agentv1.ProcessEvent_Output{Output: &agentv1.Output{Stream: agentv1.Stream_STREAM_STDERR, Data: msg}}},
		{Event: &agentv1.ProcessEvent_Exited{Exited: &agentv1.Exited{ExitCode: e.code, StderrEnd: int64(len(msg))}}},
	}
}

// childIO are a new child's standard streams: the child's ends, passed to
// it and closed once it has them, and ours.
type childIO struct {
	child  [3]int
	in     *os.File   // our end of its stdin, or nil (it reads /dev/null)
	out    []*os.File // what we drain: stdout and stderr, or the PTY
	pty    *os.File   // the PTY's master, for resizing; nil without
	closes []int      // the child's ends, closed after the spawn
}

// closeChild closes the child's ends of s.
func (s *childIO) closeChild() {
	for _, fd := range s.closes {
		unix.Close(fd)
	}
	s.closes = nil
}

// closeOurs closes our ends of s, after a failed spawn.
func (s *childIO) closeOurs() {
	if s.in != nil {
		s.in.Close()
	}
	for _, f := range s.out {
		f.Close()
	}
}

// pipes makes a child's stdio of pipes: its stdout and stderr, and its
// stdin when it gets input (otherwise it reads /dev/null, at EOF as an
// empty pipe would be, which spares a pipe per exec).
func pipes(input bool) (s *childIO, err error) {
	s = &childIO{}
	defer func() {
		if err != nil {
			s.closeChild()
			s.closeOurs()
		}
	}()
	s.child[0] = devNull()
	if input || s.child[0] < 0 {
		if s.in, s.child[0], err = childPipe(true); err != nil {
			return nil, err
		}
		s.closes = append(s.closes, s.child[0])
	}
	for i := 1; i <= 2; i++ {
		f, fd, err := childPipe(false)
		if err != nil {
			return nil, err
		}
		s.out, s.child[i], s.closes = append(s.out, f), fd, append(s.closes, fd)
	}
	return s, nil
}

// childPipe creates a pipe for a child: the child's end (the read end when
// childReads) is a plain blocking descriptor, as programs expect, that
// never meets Go's poller; ours is a non-blocking *os.File that does, so
// that its reads and writes can be cut off with deadlines. Both are
// close-on-exec: the child gets its end through ProcAttr.Files.
func childPipe(childReads bool) (ours *os.File, theirs int, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, fmt.Errorf("creating pipe: %w", err)
	}
	our, their := fds[0], fds[1]
	if childReads {
		our, their = their, our
	}
	if err := unix.SetNonblock(our, true); err != nil {
		unix.Close(our)
		unix.Close(their)
		return nil, -1, fmt.Errorf("creating pipe: %w", err)
	}
	if !childReads {
		// An output pipe as large as a read: a child writing fast wakes
		// the drain once per outputPipeBytes, not per 64 KiB (best effort:
		// the default stays where the size is refused).
		_, _ = unix.FcntlInt(uintptr(our), unix.F_SETPIPE_SZ, outputPipeBytes)
	}
	return os.NewFile(uintptr(our), "pipe"), their, nil
}

// devNull returns a descriptor of /dev/null, opened once and shared by
// every child without stdin, or -1 when there is none (such a child gets
// an empty pipe instead).
var devNull = sync.OnceValue(func() int {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// credential is the user req asks the child to run as, or nil.
func credential(req *agentv1.ExecRequest) *syscall.Credential {
	if !req.GetSetUser() {
		return nil
	}
	return &syscall.Credential{
		Uid:    req.GetUid(),
		Gid:    req.GetGid(),
		Groups: req.GetGroups(),
	}
}

// outputLimit is the capture cap of a Start stream for a requested
// max_output_bytes: 0 means none.
func outputLimit(requested int64) int64 {
	return min(max(requested, 0), MaxOutputBytes)
}

// ringSize is the ring buffer size for a requested ring_bytes.
func ringSize(requested int64) int {
	if requested <= 0 {
		return agentv1.DefaultRingBytes
	}
	return int(min(max(requested, agentv1.MinRingBytes), agentv1.MaxRingBytes))
}
