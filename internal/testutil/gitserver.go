package testutil

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// GitServer is a git server over smart HTTP for tests: the host's git
// http-backend behind net/http/cgi on 127.0.0.1, serving the bare
// repositories under Root to clients with HTTP basic auth of its user
// and password (pulls and pushes both).
type GitServer struct {
	// URL is the server's base (http://127.0.0.1:PORT/); a repository
	// Root/NAME is at URL+NAME.
	URL  string
	Port uint16
	Root string

	mu sync.Mutex
	// refused counts requests whose credentials were wrong or missing.
	refused int
}

// ServeGit starts a GitServer for the test, skipping it without git.
func ServeGit(t testing.TB, user, password string) *GitServer {
	t.Helper()
	git := RequiresBinary(t, "git")
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	s := &GitServer{Root: t.TempDir()}
	// Other users (the sandboxes' files are root's, but a test may run
	// git as another user on the host) must reach the repositories.
	if err := os.Chmod(s.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	cgiHandler := &cgi.Handler{Path: backend, Root: "/", Env: []string{
		"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user, "HOME=" + s.Root,
	}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			s.mu.Lock()
			s.refused++
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	s.URL = "http://127.0.0.1:" + strconv.Itoa(int(s.Port)) + "/"
	return s
}

// Refused is how many requests came without the right credentials.
func (s *GitServer) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Bare creates the empty bare repository Root/name (its HEAD on main)
// and returns its directory.
func (s *GitServer) Bare(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, name)
	if out, err := exec.Command("git", "init", "-q", "--bare", "--initial-branch=main", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v\n%s", err, out)
	}
	return dir
}

// Git runs git with args in dir on the host (as the test's user, with no
// config of the user's) and returns its trimmed output.
func (s *GitServer) Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+s.Root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.com",
		"GIT_COMMITTER_NAME=host", "GIT_COMMITTER_EMAIL=host@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}
