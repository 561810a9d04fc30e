package spec

// The user a sandbox's commands run as, resolved over its image: at
// create (the image's USER) and per call (a name or uid[:gid]).

import (
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// defaultPath is the PATH of an image whose config sets none, as
// container engines give it.
const defaultPath = "PATH=" + runtime.DefaultPath

// ImageUser resolves the image's configured user at create time (nil:
// root). An image naming a user or group it does not define cannot
// start: S300.
func ImageUser(img *image.Image) (*image.User, error) {
	u, err := img.ResolveUser()
	if err != nil {
		return nil, errdefs.New(errdefs.CodeBootFailed, "image %s: %v", img.Name, err).
			WithFix(nil, "fix the image's USER, or add the user to its /etc/passwd and /etc/group")
	}
	return u, nil
}

// NamedUser resolves user, a name or uid[:gid] of img, for one call:
// S001 when it does not resolve; root named is root with home /root.
func NamedUser(img *image.Image, user string) (*image.User, error) {
	named := *img
	named.Config.User = user
	u, err := named.ResolveUser()
	if err != nil {
		return nil, errdefs.Malformed("user %q: %v", Clip(user, 64), err)
	}
	if u == nil {
		u = &image.User{Home: "/root"} // root, named
	}
	return u, nil
}

// BaseEnv is what lies under an image's own env, as container engines
// set it: a PATH, and HOME from the user's passwd entry (/root when the
// image runs as root).
func BaseEnv(u *image.User) []string {
	home := "/root"
	if u != nil {
		home = u.Home
	}
	return []string{defaultPath, "HOME=" + home}
}

// FsUser is the identity the agent runs filesystem calls as: the image's
// user, or nil (root) as for execs.
func FsUser(u *image.User) *agentv1.FsUser {
	if u == nil {
		return nil
	}
	return &agentv1.FsUser{UID: u.UID, GID: u.GID, Groups: u.Groups}
}

// ApplyUser makes areq run as u; nil keeps the agent's identity (root).
func ApplyUser(areq *agentv1.ExecRequest, u *image.User) {
	if u == nil {
		return
	}
	areq.SetUser, areq.Uid, areq.Gid, areq.Groups = true, u.UID, u.GID, u.Groups
}
