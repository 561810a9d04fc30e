package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// dockerClient speaks the Docker Engine API over its unix socket with
// plain net/http: only the calls the baselines make, as the docker CLI
// makes them (create, start, exec create/start/inspect, archive, import).
type dockerClient struct {
	hc   *http.Client
	sock string
}

// dockerHost is the URL host of every request; the socket decides where
// they go.
const dockerHost = "http://docker"

func newDockerClient(sock string) *dockerClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 64,
	}
	return &dockerClient{hc: &http.Client{Transport: tr}, sock: sock}
}

// close drops the idle connections.
func (d *dockerClient) close() { d.hc.CloseIdleConnections() }

// call sends one request and returns the 2xx answer, whose body the
// caller closes; any other status is an error with Docker's message.
func (d *dockerClient) call(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, dockerHost+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Message string `json:"message"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		return nil, &dockerError{status: resp.StatusCode, msg: fmt.Sprintf("docker %s %s: %s: %s", method, path, resp.Status, clip(msg, 300))}
	}
	return resp, nil
}

// dockerError is a non-2xx answer of the Engine API.
type dockerError struct {
	status int
	msg    string
}

func (e *dockerError) Error() string { return e.msg }

// do sends in (when not nil) as JSON and decodes the answer into out
// (when not nil).
func (d *dockerClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	contentType := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	resp, err := d.call(ctx, method, path, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the answer of docker %s %s: %w", method, path, err)
	}
	return nil
}

// version returns the Engine's version.
func (d *dockerClient) version(ctx context.Context) (string, error) {
	var v struct {
		Version    string `json:"Version"`
		APIVersion string `json:"ApiVersion"`
	}
	if err := d.do(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return "", err
	}
	return fmt.Sprintf("Docker Engine %s (API %s)", v.Version, v.APIVersion), nil
}

// imageExists reports whether the Engine has image ref.
func (d *dockerClient) imageExists(ctx context.Context, ref string) (bool, error) {
	err := d.do(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil)
	var de *dockerError
	if errors.As(err, &de) && de.status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// importRootfs is `docker import`: it streams the directory rootfs as a
// tar archive into a new image repo:tag.
func (d *dockerClient) importRootfs(ctx context.Context, rootfs, repo, tag string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(pw, rootfs)) }()
	q := url.Values{"fromSrc": {"-"}, "repo": {repo}, "tag": {tag}}
	resp, err := d.call(ctx, http.MethodPost, "/images/create?"+q.Encode(), pr, "application/x-tar")
	pr.CloseWithError(errors.New("import ended"))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The answer is a stream of JSON progress messages; a failure is one
	// with an error.
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading docker import progress: %w", err)
		}
		if m.Error != "" {
			return fmt.Errorf("docker import: %s", m.Error)
		}
	}
}

// tarDir writes the tree under root to w as a tar archive, with owners,
// modes, symlinks, hard links and device nodes; sockets are skipped.
func tarDir(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	inodes := map[uint64]string{} // first path of each hard-linked inode
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return fmt.Errorf("archiving %s: %w", p, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
			if fi.Mode().IsRegular() && st.Nlink > 1 {
				if first, seen := inodes[st.Ino]; seen {
					hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				} else {
					inodes[st.Ino] = hdr.Name
				}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// containerSpec is what the baselines run: the benchmark image, idle, with
// the limits and the isolation of an hutch sandbox (no network).
type containerSpec struct {
	Image    string
	Cmd      []string
	Env      []string
	CPUs     uint32
	MemoryMB uint32
	Pids     int64
}

// create creates a container and returns its id.
func (d *dockerClient) create(ctx context.Context, s containerSpec) (string, error) {
	mem := int64(s.MemoryMB) << 20
	body := map[string]any{
		"Image":           s.Image,
		"Cmd":             s.Cmd,
		"Env":             s.Env,
		"NetworkDisabled": true,
		"HostConfig": map[string]any{
			"NetworkMode": "none",
			"Memory":      mem,
			"MemorySwap":  mem,
			"NanoCpus":    int64(s.CPUs) * 1e9,
			"PidsLimit":   s.Pids,
		},
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := d.do(ctx, http.MethodPost, "/containers/create", body, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// start starts container id.
func (d *dockerClient) start(ctx context.Context, id string) error {
	return d.do(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil)
}

// remove kills and removes container id.
func (d *dockerClient) remove(ctx context.Context, id string) error {
	return d.do(ctx, http.MethodDelete, "/containers/"+id+"?force=true&v=true", nil, nil)
}

// exec is `docker exec`: it runs argv in container id, collects its
// output from the multiplexed stream and returns it with the exit status.
func (d *dockerClient) exec(ctx context.Context, id string, argv ...string) (stdout, stderr []byte, code int, err error) {
	var created struct {
		ID string `json:"Id"`
	}
	err = d.do(ctx, http.MethodPost, "/containers/"+id+"/exec",
		map[string]any{"AttachStdout": true, "AttachStderr": true, "Cmd": argv}, &created)
	if err != nil {
		return nil, nil, 0, err
	}
	b, _ := json.Marshal(map[string]any{"Detach": false, "Tty": false})
	resp, err := d.call(ctx, http.MethodPost, "/exec/"+created.ID+"/start", bytes.NewReader(b), "application/json")
	if err != nil {
		return nil, nil, 0, err
	}
	var outBuf, errBuf bytes.Buffer
	err = demux(resp.Body, &outBuf, &errBuf)
	resp.Body.Close()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("reading docker exec output: %w", err)
	}
	// The stream ends as the process does; the exit status follows.
	for range 100 {
		var st struct {
			Running  bool `json:"Running"`
			ExitCode int  `json:"ExitCode"`
		}
		if err := d.do(ctx, http.MethodGet, "/exec/"+created.ID+"/json", nil, &st); err != nil {
			return nil, nil, 0, err
		}
		if !st.Running {
			return outBuf.Bytes(), errBuf.Bytes(), st.ExitCode, nil
		}
		time.Sleep(time.Millisecond)
	}
	return nil, nil, 0, fmt.Errorf("docker exec %s: still running after its output ended", argv[0])
}

// demux splits Docker's multiplexed stream (frames of an 8-byte header:
// stream, 3 zero bytes, big-endian size; then the payload) into stdout
// and stderr.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		w := stdout
		switch hdr[0] {
		case 1:
		case 2:
			w = stderr
		default:
			w = io.Discard // stdin echo or a system message
		}
		if _, err := io.CopyN(w, r, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return err
		}
	}
}

// putArchive extracts the tar archive body into directory dir of
// container id (what `docker cp` to a container does).
func (d *dockerClient) putArchive(ctx context.Context, id, dir string, body io.Reader) error {
	resp, err := d.call(ctx, http.MethodPut, "/containers/"+id+"/archive?path="+url.QueryEscape(dir), body, "application/x-tar")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// getArchive returns path of container id as a tar archive (what `docker
// cp` from a container does); the caller closes it.
func (d *dockerClient) getArchive(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := d.call(ctx, http.MethodGet, "/containers/"+id+"/archive?path="+url.QueryEscape(path), nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
