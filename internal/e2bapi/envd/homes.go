package envd

// Home directories. envd starts commands, and resolves relative paths, in
// the home directory of the user a request acts as. Commands start in it
// through hutch's "~" workdir (the agent reads the user's passwd entry,
// else HOME, as it starts them). So that files agree, the transport asks
// the sandbox once per user where "~" is, with pwd run there, and
// remembers it.

import (
	"context"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/hutch-dev/hutch/api"
)

// Bounds of the home lookup.
const (
	// maxHomes bounds the remembered homes (sandbox, user); past it
	// they are forgotten and asked again.
	maxHomes = 4096
	// homeTimeoutMs bounds the lookup's process.
	homeTimeoutMs = 10_000
	// maxHomeBytes bounds a home path read from a sandbox.
	maxHomeBytes = 4096
)

// homeArgv prints the directory it runs in: started in "~", the home of
// the user running it, as commands get it.
var homeArgv = []string{"/bin/sh", "-c", "pwd"}

// homeKey names a user of a sandbox.
type homeKey struct{ sandbox, user string }

// homes remembers each sandbox user's home.
type homes struct {
	// mu guards m.
	mu sync.Mutex
	m  map[homeKey]string
}

// home is the home directory of sc's user: asked of the sandbox the first
// time, then remembered; guessed (/root, /home/NAME) when the sandbox
// cannot tell.
func (s *server) home(ctx context.Context, sc scope) string {
	key := homeKey(sc)
	s.homes.mu.Lock()
	h, ok := s.homes.m[key]
	s.homes.mu.Unlock()
	if ok {
		return h
	}
	h, err := s.askHome(ctx, sc)
	if err != nil {
		return guessHome(sc.user)
	}
	s.homes.mu.Lock()
	defer s.homes.mu.Unlock()
	if s.homes.m == nil || len(s.homes.m) >= maxHomes {
		s.homes.m = map[homeKey]string{}
	}
	s.homes.m[key] = h
	return h
}

// askHome runs homeArgv as sc's user in "~" and reads its answer, which
// must be a clean absolute path (the sandbox's answer is untrusted).
func (s *server) askHome(ctx context.Context, sc scope) (string, error) {
	started, err := call[api.ProcessStartResponse](ctx, s.t, api.FnProcessStart, api.ProcessStartRequest{
		SandboxID: sc.sandbox, User: sc.user, Argv: homeArgv, Workdir: api.WorkdirHome, TimeoutMs: homeTimeoutMs})
	if err != nil {
		return "", err
	}
	proc := api.ProcessRequest{SandboxID: sc.sandbox, Pid: started.Pid}
	done, err := call[api.ProcessInfo](ctx, s.t, api.FnProcessWait, api.ProcessWaitRequest{SandboxID: sc.sandbox, Pid: started.Pid, TimeoutMs: homeTimeoutMs})
	if err != nil || done.ExitCode == nil || *done.ExitCode != 0 {
		_, _ = call[api.ProcessSignalResponse](context.WithoutCancel(ctx), s.t, api.FnProcessKill, proc)
		return "", invalid("the sandbox did not tell its user's home")
	}
	out, err := call[api.ProcessOutputResponse](ctx, s.t, api.FnProcessOutput, api.ProcessOutputRequest{SandboxID: sc.sandbox, Pid: started.Pid})
	if err != nil {
		return "", err
	}
	h := strings.TrimSuffix(out.Stdout.Data, "\n")
	if out.Stdout.Base64 || len(h) > maxHomeBytes || !path.IsAbs(h) || path.Clean(h) != h || strings.ContainsRune(h, 0) {
		return "", invalid("the sandbox's home is not a clean absolute path")
	}
	return h, nil
}

// resolve makes p absolute: a relative path is under the home of sc's
// user, as envd has it.
func (s *server) resolve(ctx context.Context, sc scope, p string) string {
	if p == "" || path.IsAbs(p) {
		return p
	}
	return path.Join(s.home(ctx, sc), p)
}

// guessHome is the home assumed for user when the sandbox cannot tell:
// /root for root or the image's user, /home/NAME otherwise.
func guessHome(user string) string {
	if user == "" || user == "root" {
		return "/root"
	}
	if _, err := strconv.Atoi(user); err == nil || strings.ContainsAny(user, ":/") {
		return "/" // a uid, whose home is unknown
	}
	return path.Join("/home", path.Base(user))
}
