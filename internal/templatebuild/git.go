package templatebuild

// ADD of a git repository (issue 39). The host's git binary fetches it
// (the smart and dumb HTTP protocols, shallow fetches, pack checks —
// what a Go library would have to reimplement), run with a clean
// environment: no system or global config, no hooks, no credential
// helper or prompt, no submodules, only the http and https transports,
// objects checked on receipt. Its every connection goes through a
// loopback proxy of this process (token-protected, one per fetch) whose
// dialer applies the build's egress policy; the proxy bounds the bytes
// received and the fetch its time.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/dfgitutil"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Bounds of an ADD of a git repository.
const (
	// MaxGitBytes bounds the bytes a fetch receives, and the size of the
	// files it checks out.
	MaxGitBytes = 512 << 20
	gitBinary   = "/usr/bin/git"
)

// GitRef is a git source of ADD, as buildkit's Dockerfile frontend
// parses it: "https://host/repo.git#ref:subdir", "git@host:repo.git",
// "git://host/repo", and the query forms (?ref=, ?tag=, ?branch=,
// ?subdir=, ?keep-git-dir=, ?checksum=).
type GitRef = dfgitutil.GitRef

// ParseGit says whether src is a git source of ADD, and parses it.
func ParseGit(src string) (*GitRef, bool, error) {
	ref, ok, err := dfgitutil.ParseGitRef(src)
	if err != nil {
		return nil, ok, err
	}
	if !ok || ref == nil || ref.IndistinguishableFromLocal {
		return nil, false, nil // "github.com/o/r" is a local path to ADD
	}
	return ref, true, nil
}

// isGit says src is a git source of ADD.
func isGit(src string) bool {
	_, ok, _ := ParseGit(src)
	return ok
}

// gitCheckHash matches an ADD --checksum of a git source: a commit
// hash or its prefix, lowercase hex.
var gitCheckHash = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// GitRepo is a remote repository whose ref is resolved to a commit; its
// proxy lives until Close.
type GitRepo struct {
	Ref    *GitRef
	Commit string
	// Remote is the URL without its user information, for messages.
	Remote   string
	fetchRef string
	g        *gitRun
}

// Close stops the repository's proxy.
func (r *GitRepo) Close() error { return r.g.close() }

// ResolveGit resolves src's ref (a branch, a tag, a full commit hash;
// HEAD without one) on its server, through dial, to a commit that
// checksum ("" for none) must begin with. A source over ssh is refused:
// hutch holds no key to give it.
func (f Fetcher) ResolveGit(ctx context.Context, ref *GitRef, checksum string) (*GitRepo, error) {
	u, err := url.Parse(ref.Remote)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errdefs.Malformed("%s: hutch fetches a git repository over http or https (its transports that the build's egress policy governs); give the https URL", clip(redactURL(ref.Remote)))
	}
	if checksum != "" && ref.Checksum != "" && checksum != ref.Checksum {
		return nil, errdefs.Malformed("--checksum=%s and the URL's checksum %s differ", clip(checksum), clip(ref.Checksum))
	}
	if checksum == "" {
		checksum = ref.Checksum
	}
	if checksum != "" && !gitCheckHash.MatchString(checksum) {
		return nil, errdefs.Malformed("--checksum=%s: a git source takes a lowercase hex commit hash", clip(checksum))
	}
	g, err := f.startGit(ctx)
	if err != nil {
		return nil, err
	}
	r := &GitRepo{Ref: ref, Remote: u.Redacted(), g: g}
	if err := r.resolve(checksum); err != nil {
		g.close()
		return nil, err
	}
	return r, nil
}

// resolve lists the server's refs and finds the commit of r.Ref.Ref.
func (r *GitRepo) resolve(checksum string) error {
	out, err := r.g.run("", "ls-remote", "--", r.Ref.Remote)
	if err != nil {
		return fmt.Errorf("listing the refs of %s: %w", clip(r.Remote), err)
	}
	refs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		sha, name, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			refs[name] = sha
		}
	}
	want := r.Ref.Ref
	if want == "" {
		want = "HEAD"
	}
	for _, name := range []string{want, "refs/tags/" + want, "refs/heads/" + want} {
		sha, ok := refs[name]
		if !ok {
			continue
		}
		if peeled, ok := refs[name+"^{}"]; ok { // an annotated tag: its commit
			sha = peeled
		}
		r.Commit, r.fetchRef = sha, name
		break
	}
	if r.Commit == "" && isCommitHash(want) {
		r.Commit, r.fetchRef = want, want
	}
	switch {
	case r.Commit == "":
		return errdefs.Malformed("%s has no branch, tag or commit %q", clip(r.Remote), clip(want))
	case checksum != "" && !strings.HasPrefix(r.Commit, checksum):
		return errdefs.Malformed("ADD --checksum: %s#%s is commit %s, not %s", clip(r.Remote), clip(want), r.Commit, checksum)
	}
	return nil
}

// isCommitHash says s is a full SHA-1 or SHA-256 commit hash.
func isCommitHash(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && (len(s) == 40 || len(s) == 64) && strings.ToLower(s) == s
}

// Checkout fetches r's commit (only it, shallow) into a new directory of
// f.Dir and checks it out; without keepGitDir its .git is removed. The
// directory is returned with the commit's time.
func (r *GitRepo) Checkout(keepGitDir bool) (dir string, commitTime time.Time, err error) {
	dir, err = os.MkdirTemp(r.g.dir, "checkout-")
	if err != nil {
		return "", time.Time{}, err
	}
	steps := [][]string{
		{"init", "-q", "--", dir},
		{"fetch", "-q", "--depth=1", "--no-tags", "--no-recurse-submodules", "--", r.Ref.Remote, r.fetchRef},
	}
	for _, s := range steps {
		if _, err := r.g.run(dir, s...); err != nil {
			return "", time.Time{}, fmt.Errorf("fetching %s#%s: %w", clip(r.Remote), clip(r.fetchRef), err)
		}
	}
	out, err := r.g.run(dir, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
	if got := strings.TrimSpace(string(out)); err == nil && got != r.Commit {
		err = fmt.Errorf("%s moved to %s while fetching %s; build again", clip(r.fetchRef), got, r.Commit)
	}
	if err == nil {
		_, err = r.g.run(dir, "checkout", "-q", "--detach", r.Commit)
	}
	if err == nil {
		out, err = r.g.run(dir, "show", "-s", "--format=%ct", r.Commit)
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("checking out %s of %s: %w", r.Commit, clip(r.Remote), err)
	}
	var secs int64
	fmt.Sscan(string(out), &secs)
	if !keepGitDir {
		if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
			return "", time.Time{}, err
		}
	}
	return dir, time.Unix(secs, 0), nil
}

// gitRun runs git for one ADD, its connections through its proxy.
type gitRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	env    []string
	srv    *http.Server
	proxy  *gitProxy
}

// startGit starts the proxy of one ADD of a git repository.
func (f Fetcher) startGit(ctx context.Context) (*gitRun, error) {
	if _, err := os.Stat(gitBinary); err != nil {
		return nil, errors.New("ADD of a git repository needs git on the daemon's host (" + gitBinary + ")")
	}
	maxBytes, timeout := f.MaxBytes, f.Timeout
	if maxBytes <= 0 {
		maxBytes = MaxGitBytes
	}
	if timeout <= 0 {
		timeout = FetchTimeout
	}
	var tok [16]byte
	rand.Read(tok[:])
	p := &gitProxy{dial: f.Dial, maxBytes: maxBytes, auth: "Basic " + base64.StdEncoding.EncodeToString([]byte("hutch:"+hex.EncodeToString(tok[:])))}
	p.transport = &http.Transport{
		DialContext:           p.dialContext,
		Proxy:                 nil,
		DisableCompression:    true,
		ResponseHeaderTimeout: time.Minute,
	}
	p.fwd = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Header.Del("Proxy-Authorization") },
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	g := &gitRun{ctx: ctx, cancel: cancel, dir: f.Dir, proxy: p, srv: &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}}
	go g.srv.Serve(ln)
	proxyURL := fmt.Sprintf("http://hutch:%s@%s", hex.EncodeToString(tok[:]), ln.Addr())
	// The config is given in the environment (only this user reads
	// it), none is read from files.
	config := [][2]string{
		{"http.proxy", proxyURL},
		{"http.proxyAuthMethod", "basic"},
		{"core.hooksPath", "/dev/null"},
		{"core.fsmonitor", "false"},
		{"credential.helper", ""},
		{"transfer.fsckObjects", "true"},
		{"protocol.allow", "never"},
		{"protocol.http.allow", "always"},
		{"protocol.https.allow", "always"},
		{"submodule.recurse", "false"},
		{"http.lowSpeedLimit", "1024"},
		{"http.lowSpeedTime", "60"},
		{"gc.auto", "0"},
		{"maintenance.auto", "false"},
		{"advice.detachedHead", "false"},
		{"init.defaultBranch", "main"},
	}
	g.env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + f.Dir, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false",
		"GIT_ALLOW_PROTOCOL=http:https", "GIT_PROTOCOL_FROM_USER=0",
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(config)),
	}
	for i, kv := range config {
		g.env = append(g.env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return g, nil
}

func (g *gitRun) close() error {
	g.cancel()
	err := g.srv.Close()
	g.proxy.transport.CloseIdleConnections()
	return err
}

// run runs git in dir ("" for f.Dir) and returns its output (bounded);
// a failure says why: the policy's or the network's refusal when the
// proxy met one, else git's last error line.
func (g *gitRun) run(dir string, args ...string) ([]byte, error) {
	if dir == "" {
		dir = g.dir
	}
	cmd := exec.CommandContext(g.ctx, gitBinary, args...)
	cmd.Dir, cmd.Env = dir, g.env
	var stdout, stderr tailBuffer
	stdout.max, stderr.max = 4<<20, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // git's helpers too
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	switch {
	case err == nil && stdout.over:
		return nil, errors.New("git's output is too large")
	case err == nil:
		return stdout.b.Bytes(), nil
	case g.ctx.Err() == context.DeadlineExceeded:
		return nil, errors.New("not done in time")
	}
	if perr := g.proxy.failure(); perr != nil {
		return nil, perr
	}
	msg := ""
	for _, l := range strings.Split(strings.TrimSpace(stderr.b.String()), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			msg = l
		}
	}
	if msg == "" {
		msg = err.Error()
	}
	return nil, errors.New(redactURL(msg))
}

// tailBuffer keeps the first max bytes written and says whether there
// were more.
type tailBuffer struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if room := t.max - t.b.Len(); len(p) > room {
		t.over = true
		t.b.Write(p[:max(room, 0)])
	} else {
		t.b.Write(p)
	}
	return len(p), nil
}

// gitProxy is the loopback proxy of one git fetch: CONNECT for https,
// forwarded requests for http, every connection made by dial.
type gitProxy struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	auth      string
	maxBytes  int64
	received  atomic.Int64
	fwd       *httputil.ReverseProxy
	transport *http.Transport
	mu        sync.Mutex
	err       error
}

// failure is the first dial refusal or the byte bound the proxy met.
func (p *gitProxy) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *gitProxy) fail(err error) error {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	return err
}

func (p *gitProxy) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := p.dial(ctx, network, addr)
	if err != nil {
		return nil, p.fail(err)
	}
	return &countedConn{Conn: c, p: p}, nil
}

func (p *gitProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Proxy-Authorization") != p.auth {
		w.Header().Set("Proxy-Authenticate", `Basic realm="hutch"`)
		http.Error(w, "", http.StatusProxyAuthRequired)
		return
	}
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "", http.StatusBadRequest)
			return
		}
		p.fwd.ServeHTTP(w, r)
		return
	}
	up, err := p.dialContext(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	w.WriteHeader(http.StatusOK)
	down, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(up, rw) // the client's bytes, buffered ones first
		up.(*countedConn).CloseWrite()
		close(done)
	}()
	io.Copy(down, up)
	down.Close()
	<-done
}

// countedConn counts the bytes received from a server against the
// fetch's bound.
type countedConn struct {
	net.Conn
	p *gitProxy
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.p.received.Add(int64(n)) > c.p.maxBytes {
		c.Conn.Close()
		return n, c.p.fail(fmt.Errorf("more than the %d MiB an ADD of a git repository fetches", c.p.maxBytes>>20))
	}
	return n, err
}

// CloseWrite half-closes the connection when it can.
func (c *countedConn) CloseWrite() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// userinfo matches a URL's user and password.
var userinfo = regexp.MustCompile(`(://[^/@\s:]*):[^/@\s]*@`)

// redactURL hides the passwords of the URLs in s.
func redactURL(s string) string { return userinfo.ReplaceAllString(s, "$1:xxxxx@") }

// GitSubdir is the directory of a checkout a source's subdir names,
// refused when it leaves the checkout or passes a symlink.
func GitSubdir(dir, subdir string) (string, error) {
	rel := strings.TrimPrefix(path.Clean("/"+subdir), "/")
	if rel == "" {
		return dir, nil
	}
	cur := dir
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil || !fi.IsDir() {
			return "", errdefs.Malformed("the repository has no directory %s", clip(subdir))
		}
	}
	return cur, nil
}

// PackDir writes dir's tree as a tar stream to w under dest (its
// contents, not dir itself): directories, regular files and symlinks
// (not followed), each with its mode (or chmod's) and modTime, at most
// MaxGitBytes of files. The paths written are appended to paths.
func PackDir(w io.Writer, dir, dest, chmod string, modTime time.Time, paths *[]string) error {
	mode, err := chmodOf(chmod)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		name := path.Join(dest, filepath.ToSlash(rel))
		hdr := &tar.Header{Name: strings.TrimPrefix(name, "/"), Mode: int64(fi.Mode().Perm()), ModTime: modTime, Format: tar.FormatPAX}
		switch {
		case fi.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		case fi.IsDir():
			hdr.Typeflag = tar.TypeDir
		case fi.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return nil
		}
		if mode >= 0 && hdr.Typeflag != tar.TypeSymlink {
			hdr.Mode = mode
		}
		if total += hdr.Size; total > MaxGitBytes {
			return errdefs.Malformed("the repository's files are more than %d MiB", MaxGitBytes>>20)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, hdr.Size)
			f.Close()
			if err != nil {
				return err
			}
		}
		*paths = append(*paths, name)
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
