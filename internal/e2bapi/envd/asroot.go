package envd

// Uploads as envd makes them. envd runs as root: it writes a file for any
// user wherever root may, creating the missing parents, and gives the file
// and the directories it created to that user. hutch writes as the user,
// so a user's write into a directory of root's (E2B's SDK tests write
// /0/file as user) is refused; such a write is made again as root, then
// given to the user. The caller of this API may run anything as root in
// the sandbox (process start with user root), so it gains nothing.

import (
	"bytes"
	"context"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// maxReplayBytes bounds what an upload keeps of its body to write it again
// as root; a write refused after more was read stays refused.
const maxReplayBytes = 1 << 20

// maxMissingParents bounds the parents a write as root may create.
const maxMissingParents = 64

// giveTimeoutMs bounds the chown that gives a root-written file to its user.
const giveTimeoutMs = 10_000

// replayable is a body that keeps its first maxReplayBytes read, so that
// a write refused early can be made again from the start.
type replayable struct {
	r    io.Reader
	kept bytes.Buffer
	read int64
}

func (b *replayable) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.kept.Len()+n <= maxReplayBytes {
		b.kept.Write(p[:n])
	}
	return n, err
}

// again is the whole body from its start, or false when more was read
// than was kept.
func (b *replayable) again() (io.Reader, bool) {
	if b.read != int64(b.kept.Len()) {
		return nil, false
	}
	return io.MultiReader(bytes.NewReader(b.kept.Bytes()), b.r), true
}

// writeAsUser writes req as sc's user, as envd: when the user may not
// write there, as root, giving the file and the parents it created to the
// user.
func (s *server) writeAsUser(ctx context.Context, sc scope, req api.FsWriteRequest) error {
	body := &replayable{r: req.Body}
	req.Body = body
	_, err := functions.Invoke(ctx, s.t, api.FnFsWrite, req)
	if err == nil || !errdefs.Is(err, errdefs.CodeFSPermission) || sc.user == "root" {
		return err
	}
	again, ok := body.again()
	if !ok {
		return err
	}
	created := s.missingParents(ctx, sc, path.Dir(req.Path))
	req.Body, req.User = again, "root"
	if _, err := functions.Invoke(ctx, s.t, api.FnFsWrite, req); err != nil {
		return err
	}
	return s.giveTo(ctx, sc, append(created, req.Path))
}

// missingParents are dir and its parents that do not exist yet, as root
// sees them, deepest first; at most maxMissingParents.
func (s *server) missingParents(ctx context.Context, sc scope, dir string) []string {
	var missing []string
	for ; dir != "/" && dir != "." && len(missing) < maxMissingParents; dir = path.Dir(dir) {
		_, err := functions.Call[api.FsEntry](ctx, s.t, api.FnFsStat, api.FsStatRequest{SandboxID: sc.sandbox, User: "root", Path: dir})
		if !errdefs.Is(err, errdefs.CodeFSNotFound) {
			break
		}
		missing = append(missing, dir)
	}
	return missing
}

// giveTo makes sc's user (and its login group) the owner of paths, as root.
func (s *server) giveTo(ctx context.Context, sc scope, paths []string) error {
	owner, err := s.ownerOf(ctx, sc)
	if err != nil {
		return err
	}
	argv := append([]string{"chown", "-h", "--", owner}, paths...)
	p, err := functions.Call[api.ProcessStartResponse](ctx, s.t, api.FnProcessStart, api.ProcessStartRequest{SandboxID: sc.sandbox, User: "root", Argv: argv})
	if err != nil {
		return err
	}
	info, err := functions.Call[api.ProcessInfo](ctx, s.t, api.FnProcessWait, api.ProcessWaitRequest{SandboxID: sc.sandbox, Pid: p.Pid, TimeoutMs: giveTimeoutMs})
	if err != nil {
		return err
	}
	if info.ExitCode == nil || *info.ExitCode != 0 {
		return errdefs.New(errdefs.CodeFSPermission, "giving %s to %s failed", paths[len(paths)-1], owner)
	}
	return nil
}

// idPair is what `id -u`:`id -g` prints.
var idPair = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

// ownerOf is chown's owner for sc's user: the user and its login group,
// or for the image's user (no user named) its uid and gid, asked of the
// sandbox.
func (s *server) ownerOf(ctx context.Context, sc scope) (string, error) {
	switch {
	case strings.Contains(sc.user, ":"):
		return sc.user, nil
	case sc.user != "":
		return sc.user + ":", nil
	}
	res, err := functions.Call[api.ExecResponse](ctx, s.t, api.FnExec, api.ExecRequest{SandboxID: sc.sandbox, Argv: []string{"sh", "-c", `echo "$(id -u):$(id -g)"`}, TimeoutMs: giveTimeoutMs})
	if err != nil {
		return "", err
	}
	if ids := strings.TrimSpace(res.Stdout); idPair.MatchString(ids) {
		return ids, nil
	}
	return "", errdefs.New(errdefs.CodeFSPermission, "the sandbox's user is unknown")
}
