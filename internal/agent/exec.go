package agent

import (
	"context"
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
	// DefaultMaxOutputBytes is the per-stream capture cap when a request
	// leaves max_output_bytes at 0.
	DefaultMaxOutputBytes = agentv1.DefaultMaxOutputBytes
	// MaxOutputBytes is the largest per-stream cap the agent grants; larger
	// requests are lowered to it.
	MaxOutputBytes = 64 << 20

	// pipeGrace is how long output is still read after the process exited,
	// for children that inherited its stdout or stderr and keep it open.
	pipeGrace = 200 * time.Millisecond
	// readChunk is the size of one read from an output pipe.
	readChunk = 32 << 10
)

// Exec runs one process to completion and returns its captured output. A
// command that cannot be run is a normal response (exit status 126 or 127);
// only a malformed request or a spawn the sandbox has no resources for is a
// gRPC error.
func (s *Server) Exec(ctx context.Context, req *agentv1.ExecRequest) (*agentv1.ExecResponse, error) {
	dir, err := checkExec(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cmd := req.GetArgv()[0]
	path, lerr := lookPath(cmd, req.GetEnv(), dir)
	if lerr != nil {
		return failure(cmd, lerr), nil
	}
	p, err := start(path, dir, req)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			if errno == syscall.EAGAIN || errno == syscall.ENOMEM {
				return nil, status.Errorf(codes.ResourceExhausted, "starting %s: %v", cmd, errno)
			}
			return failure(cmd, spawnError(errno)), nil
		}
		return nil, status.Errorf(codes.Internal, "starting %s: %v", cmd, err)
	}
	return p.wait(ctx, time.Duration(req.GetTimeoutMs())*time.Millisecond)
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

// spawnError classifies an execve (or chdir, setuid) failure of the child.
func spawnError(errno syscall.Errno) *lookupError {
	if errno == syscall.ENOENT {
		// The file exists (lookPath saw it): a missing #! interpreter.
		return &lookupError{code: exitNotFound, reason: errno.Error()}
	}
	return &lookupError{code: exitNotExecutable, reason: errno.Error()}
}

// failure is the response for a command that could not be run.
func failure(cmd string, e *lookupError) *agentv1.ExecResponse {
	return &agentv1.ExecResponse{
		Exited:   true,
		ExitCode: e.code,
		Stderr:   []byte("exec: " + cmd + ": " + e.reason + "\n"),
	}
}

// process is one running exec and the goroutines feeding and draining it.
type process struct {
	pid    int
	status <-chan syscall.WaitStatus
	// started is when the spawn began; spawn is how long it took.
	started time.Time
	spawn   time.Duration

	stdin          *os.File // our end of the child's stdin; nil without stdin
	stdout, stderr *capture
	// io is closed once the stdin writer and both readers have returned.
	io chan struct{}
}

// start spawns the child described by req in its own process group, with
// pipes for its stdout and stderr and, when req has stdin, for its stdin
// (otherwise the child reads /dev/null, at EOF as an empty pipe would be,
// which spares a pipe and a goroutine per exec), and starts feeding and
// draining them.
func start(path, dir string, req *agentv1.ExecRequest) (_ *process, err error) {
	var ours []*os.File // our pipe ends, closed on failure
	var theirs []int    // the child's pipe ends, closed once it has them
	defer func() {
		for _, fd := range theirs {
			unix.Close(fd)
		}
		if err != nil {
			for _, f := range ours {
				f.Close()
			}
		}
	}()
	pipe := func(childReads bool) (*os.File, int, error) {
		f, fd, err := childPipe(childReads)
		if err != nil {
			return nil, -1, err
		}
		ours, theirs = append(ours, f), append(theirs, fd)
		return f, fd, nil
	}
	stdin := devNull()
	var inW *os.File
	if len(req.GetStdin()) > 0 || stdin < 0 {
		if inW, stdin, err = pipe(true); err != nil {
			return nil, err
		}
	}
	outR, outW, err := pipe(false)
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe(false)
	if err != nil {
		return nil, err
	}

	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   req.GetEnv(),
		Files: []uintptr{uintptr(stdin), uintptr(outW), uintptr(errW)},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Credential: credential(req)},
	}
	p := &process{stdin: inW, io: make(chan struct{})}
	p.pid, p.status, err = children.spawn(func() (int, error) {
		p.started = time.Now()
		pid, err := syscall.ForkExec(path, req.GetArgv(), attr)
		p.spawn = time.Since(p.started)
		return pid, err
	})
	if err != nil {
		return nil, err
	}

	limit := outputLimit(req.GetMaxOutputBytes())
	p.stdout = &capture{f: outR, limit: limit}
	p.stderr = &capture{f: errR, limit: limit}
	var wg sync.WaitGroup
	if inW != nil {
		wg.Go(func() { writeStdin(inW, req.GetStdin()) })
	}
	wg.Go(p.stdout.drain)
	wg.Go(p.stderr.drain)
	go func() {
		wg.Wait()
		close(p.io)
	}()
	return p, nil
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

// outputLimit is the per-stream cap for a requested max_output_bytes.
func outputLimit(requested int64) int {
	switch {
	case requested <= 0:
		return DefaultMaxOutputBytes
	case requested > MaxOutputBytes:
		return MaxOutputBytes
	}
	return int(requested)
}

// writeStdin writes data to the child's stdin and closes it, so the child
// sees EOF. A child that exits without reading makes the write fail; that
// is not an error of the exec.
func writeStdin(w *os.File, data []byte) {
	if len(data) > 0 {
		_, _ = w.Write(data)
	}
	w.Close()
}

// wait waits for the child to exit, or kills its process group when the
// timeout fires or ctx ends, and builds the response.
func (p *process) wait(ctx context.Context, timeout time.Duration) (*agentv1.ExecResponse, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var ws syscall.WaitStatus
	timedOut := false
	select {
	case ws = <-p.status:
	case <-expired:
		select {
		case ws = <-p.status: // exited just in time
		default:
			timedOut = true
			children.kill(p.pid)
			ws = <-p.status
		}
	case <-ctx.Done():
		// The caller is gone (deadline, cancel, or the session closed).
		children.kill(p.pid)
		<-p.status
		p.release(0)
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	ended := time.Now()
	p.release(pipeGrace)

	resp := &agentv1.ExecResponse{
		Stdout:          p.stdout.buf,
		Stderr:          p.stderr.buf,
		StdoutTruncated: p.stdout.truncated,
		StderrTruncated: p.stderr.truncated,
		DurationUs:      ended.Sub(p.started).Microseconds(),
		SpawnUs:         p.spawn.Microseconds(),
	}
	switch {
	case timedOut:
		// exited=false; exit_code carries no status, and says so.
		resp.TimedOut = true
		resp.ExitCode = -1
	case ws.Signaled():
		resp.Exited = true
		resp.ExitCode = 128 + int32(ws.Signal())
	default:
		resp.Exited = true
		resp.ExitCode = int32(ws.ExitStatus())
	}
	return resp, nil
}

// release stops the stdin writer and the output readers, giving them up to
// grace to finish on their own: a child the process left behind may hold
// its pipes open indefinitely. Afterwards the captures are safe to read.
func (p *process) release(grace time.Duration) {
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.io:
		case <-t.C:
		}
	}
	now := time.Now()
	// Errors only mean the file is already closed: its goroutine is done.
	if p.stdin != nil {
		_ = p.stdin.SetWriteDeadline(now)
	}
	_ = p.stdout.f.SetReadDeadline(now)
	_ = p.stderr.f.SetReadDeadline(now)
	<-p.io
	p.stdout.f.Close()
	p.stderr.f.Close()
}

// capture reads one output pipe to its end, keeping the first limit bytes
// and discarding the rest, so the child never blocks on a full pipe.
type capture struct {
	f     *os.File
	limit int

	// buf and truncated belong to drain until it returns.
	buf       []byte
	truncated bool
}

func (c *capture) drain() {
	chunk := make([]byte, readChunk)
	for {
		n, err := c.f.Read(chunk)
		c.keep(chunk[:n])
		if err != nil {
			return
		}
	}
}

// keep appends what fits under the limit and notes what does not.
func (c *capture) keep(b []byte) {
	if room := c.limit - len(c.buf); len(b) > room {
		b = b[:room]
		c.truncated = true
	}
	c.buf = append(c.buf, b...)
}
