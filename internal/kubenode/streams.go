package kubenode

// The kubelet API's streams: exec (stdin, TTY, resize), logs (-f) and
// port-forward, each through the function table's process and port
// functions.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	vkerrdefs "github.com/virtual-kubelet/virtual-kubelet/errdefs"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// stdinChunk bounds one write of an exec's stdin to the sandbox.
const stdinChunk = 32 << 10

func newMux() *http.ServeMux { return http.NewServeMux() }

// RunInContainer runs cmd in the Pod's sandbox as `kubectl exec` asks:
// its output streamed, stdin and terminal resizes forwarded, its exit
// code returned as the exec's.
func (p *provider) RunInContainer(ctx context.Context, ns, name, _ string, cmd []string, attach vkapi.AttachIO) error {
	id, _, err := p.sandboxOf(ns, name)
	ctx = onNode(p.asOwner(ctx, ns, name)) // issue 36
	if err != nil {
		return err
	}
	req := api.ProcessStartRequest{SandboxID: id, Argv: cmd, Stdin: attach.Stdin() != nil}
	if attach.TTY() {
		req.Pty = &api.PtySize{Cols: 80, Rows: 24}
	}
	started, err := functions.Call[api.ProcessStartResponse](ctx, p.o.Table, api.FnProcessStart, req)
	if err != nil {
		return err
	}
	pid := started.Pid
	defer func() {
		// The caller went away: the process goes too.
		if ctx.Err() != nil {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = functions.Call[api.ProcessSignalResponse](kctx, p.o.Table, api.FnProcessKill, api.ProcessRequest{SandboxID: id, Pid: pid})
		}
	}()
	if req.Stdin {
		go p.pumpStdin(ctx, id, pid, attach.Stdin())
	}
	if ch := attach.Resize(); ch != nil {
		go func() {
			for {
				select {
				case sz, ok := <-ch:
					if !ok {
						return
					}
					_, _ = functions.Call[api.ProcessResizeResponse](ctx, p.o.Table, api.FnProcessResize,
						api.ProcessResizeRequest{SandboxID: id, Pid: pid, PtySize: api.PtySize{Cols: sz.Width, Rows: sz.Height}})
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	info, err := p.copyOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: pid, Follow: true}, attach.Stdout(), attach.Stderr())
	if err != nil {
		return err
	}
	if info.ExitCode != nil && *info.ExitCode != 0 {
		return utilexec.CodeExitError{Err: errors.New("command terminated with a non-zero exit code"), Code: *info.ExitCode}
	}
	return nil
}

// pumpStdin writes what r gives to the process's stdin, then closes it.
func (p *provider) pumpStdin(ctx context.Context, id string, pid int, r io.Reader) {
	buf := make([]byte, stdinChunk)
	for ctx.Err() == nil {
		n, err := r.Read(buf)
		req := api.ProcessStdinRequest{SandboxID: id, Pid: pid, Data: base64.StdEncoding.EncodeToString(buf[:n]), Base64: true, Close: err != nil}
		if n > 0 || req.Close {
			if _, werr := functions.Call[api.ProcessStdinResponse](ctx, p.o.Table, api.FnProcessStdin, req); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyOutput follows a process's output into stdout and stderr (either
// may be nil) until it exits, and returns its end.
func (p *provider) copyOutput(ctx context.Context, req api.ProcessOutputRequest, stdout, stderr io.Writer) (api.ProcessInfo, error) {
	st, err := functions.Call[*functions.Stream](ctx, p.o.Table, api.FnProcessOutput, req)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer st.Close()
	for {
		ev, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			if out, ok := st.Result().(api.ProcessOutputResponse); ok {
				return out.Process, nil
			}
			if info, ok := st.Result().(api.ProcessInfo); ok {
				return info, nil
			}
			return api.ProcessInfo{}, errdefs.New(errdefs.CodeInternal, "a process's output ended with a %T", st.Result())
		}
		if err != nil {
			return api.ProcessInfo{}, err
		}
		if ev.Type == api.EventExit {
			if info, ok := ev.Data.(api.ProcessInfo); ok {
				return info, nil
			}
		}
		w := stdout
		if ev.Type == api.EventStderr {
			w = stderr
		}
		chunk, ok := ev.Data.(api.OutputChunk)
		if !ok || w == nil || (ev.Type != api.EventStdout && ev.Type != api.EventStderr) {
			continue
		}
		data, err := chunkBytes(chunk)
		if err != nil {
			return api.ProcessInfo{}, err
		}
		if _, err := w.Write(data); err != nil {
			return api.ProcessInfo{}, err
		}
	}
}

// chunkBytes is a chunk's bytes.
func chunkBytes(c api.OutputChunk) ([]byte, error) {
	if !c.Base64 {
		return []byte(c.Data), nil
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeInternal, err, "decoding a process's output")
	}
	return b, nil
}

// GetContainerLogs is the output of the Pod's main process (stdout, then
// stderr), followed until it exits with opts.Follow. LimitBytes and Tail
// (the last lines of what the sandbox holds, then the follow from there)
// are honoured; since and timestamps are refused: the output carries no
// times.
func (p *provider) GetContainerLogs(ctx context.Context, ns, name, _ string, opts vkapi.ContainerLogOpts) (io.ReadCloser, error) {
	if opts.SinceSeconds > 0 || !opts.SinceTime.IsZero() || opts.Timestamps {
		return nil, vkerrdefs.InvalidInput("--since, --since-time and --timestamps are not supported on a hutch node: a sandbox's output carries no times")
	}
	id, pid, err := p.sandboxOf(ns, name)
	ctx = onNode(p.asOwner(ctx, ns, name)) // issue 36
	if err != nil {
		return nil, err
	}
	if pid == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer cancel()
		var w io.Writer = pw
		if opts.LimitBytes > 0 {
			w = &limitWriter{w: pw, left: opts.LimitBytes, cancel: cancel}
		}
		req := api.ProcessOutputRequest{SandboxID: id, Pid: pid}
		if !opts.Follow || opts.Tail > 0 {
			out, err := functions.Call[api.ProcessOutputResponse](ctx, p.o.Table, api.FnProcessOutput, req)
			var stdout, stderr []byte
			if err == nil {
				stdout, stderr, err = chunksBytes(out.Stdout, out.Stderr)
			}
			if err == nil {
				_, err = w.Write(lastLines(append(stdout, stderr...), opts.Tail))
			}
			if err != nil || !opts.Follow {
				pw.CloseWithError(err)
				return
			}
			req.StdoutOffset = out.Stdout.Offset + int64(len(stdout))
			req.StderrOffset = out.Stderr.Offset + int64(len(stderr))
		}
		req.Follow = true
		_, err := p.copyOutput(ctx, req, w, w)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		pw.CloseWithError(err)
	}()
	return readCloser{pr, func() { cancel(); pr.Close() }}, nil
}

// chunksBytes is the bytes of a process's stdout and stderr chunks.
func chunksBytes(stdout, stderr api.OutputChunk) ([]byte, []byte, error) {
	out, err := chunkBytes(stdout)
	if err != nil {
		return nil, nil, err
	}
	errb, err := chunkBytes(stderr)
	return out, errb, err
}

// lastLines is the last n lines of b (a final line without its newline
// counts); all of b for n <= 0.
func lastLines(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// limitWriter passes on the first left bytes, then ends the copy.
type limitWriter struct {
	w      io.Writer
	left   int
	cancel context.CancelFunc
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if len(b) > l.left {
		b = b[:l.left]
	}
	n, err := l.w.Write(b)
	l.left -= n
	if l.left <= 0 {
		l.cancel()
	}
	return n, err
}

type readCloser struct {
	io.Reader
	close func()
}

func (r readCloser) Close() error { r.close(); return nil }

// AttachToContainer is not offered: a Pod's main process is reached by
// its logs, and a shell by exec.
func (p *provider) AttachToContainer(context.Context, string, string, string, vkapi.AttachIO) error {
	return vkerrdefs.InvalidInput("attach is not supported on a hutch node: use kubectl exec or kubectl logs -f")
}

// PortForward connects stream to port of the Pod's sandbox, through the
// preview path (the port is exposed when the Pod starts, or here).
func (p *provider) PortForward(ctx context.Context, ns, name string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	id, _, err := p.sandboxOf(ns, name)
	ctx = onNode(p.asOwner(ctx, ns, name)) // issue 36
	if err != nil {
		return err
	}
	if p.o.Dial == nil {
		return vkerrdefs.InvalidInput("port-forward is not available on this node")
	}
	if _, err := functions.Call[api.PortInfo](ctx, p.o.Table, api.FnPortExpose, api.PortExposeRequest{SandboxID: id, Port: int(port)}); err != nil {
		return err
	}
	conn, err := p.o.Dial(ctx, id, int(port))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); closeWrite(conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// GetStatsSummary has no figures yet: the node reports none.
func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{}, nil
}

// GetMetricsResource has no figures yet: the node reports none.
func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}
