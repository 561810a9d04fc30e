package sandbox

import (
	"context"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// defaultPath is the PATH of an image whose config sets none, as
// container engines give it.
const defaultPath = "PATH=" + runtime.DefaultPath

// resolveUser resolves the image's configured user at create time. An
// image naming a user or group it does not define cannot start: S300.
func resolveUser(img *image.Image) (*image.User, error) {
	u, err := img.ResolveUser()
	if err != nil {
		return nil, errdefs.New(errdefs.CodeBootFailed, "image %s: %v", img.Name, err).
			WithFix(nil, "fix the image's USER, or add the user to its /etc/passwd and /etc/group")
	}
	return u, nil
}

// imageBaseEnv is what lies under an image's own env, as container
// engines set it: a PATH, and HOME from the user's passwd entry (/root
// when the image runs as root).
func imageBaseEnv(u *image.User) []string {
	home := "/root"
	if u != nil {
		home = u.Home
	}
	return []string{defaultPath, "HOME=" + home}
}

// applyUser makes areq run as u; nil keeps the agent's identity (root).
func applyUser(areq *agentv1.ExecRequest, u *image.User) {
	if u == nil {
		return
	}
	areq.SetUser, areq.Uid, areq.Gid, areq.Groups = true, u.UID, u.GID, u.Groups
}

// fsUser is the identity the agent runs filesystem calls as: the image's
// user, or nil (root) as for execs.
func fsUser(u *image.User) *agentv1.FsUser {
	if u == nil {
		return nil
	}
	return &agentv1.FsUser{UID: u.UID, GID: u.GID, Groups: u.Groups}
}

// namedUser resolves user, a name or uid[:gid] of sb's image, for one
// call; "" is the sandbox's own user (nil: root).
func (sb *sandbox) namedUser(user string) (*image.User, error) {
	if user == "" {
		return sb.user, nil
	}
	img := *sb.image
	img.Config.User = user
	u, err := img.ResolveUser()
	if err != nil {
		return nil, errdefs.Malformed("user %q: %v", spec.Clip(user, 64), err)
	}
	if u == nil {
		u = &image.User{Home: "/root"} // root, named
	}
	return u, nil
}

// fsAs makes the filesystem calls made with the returned context run as
// user on sb ("": the sandbox's own user).
func fsAs(ctx context.Context, sb *sandbox, user string) (context.Context, error) {
	if user == "" {
		return ctx, nil
	}
	u, err := sb.namedUser(user)
	if err != nil {
		return nil, err
	}
	return agentclient.WithFsUser(ctx, fsUser(u)), nil
}
