package sandbox

import (
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// applyUser makes areq run as u; nil keeps the agent's identity (root).
func applyUser(areq *agentv1.ExecRequest, u *image.User) {
	if u == nil {
		return
	}
	areq.SetUser, areq.Uid, areq.Gid, areq.Groups = true, u.UID, u.GID, u.Groups
}

// namedUser resolves user, a name or uid[:gid] of sb's image, for one
// call (spec.NamedUser); "" is the sandbox's own user (nil: root).
func (sb *sandbox) namedUser(user string) (*image.User, error) {
	if user == "" {
		return sb.user, nil
	}
	return spec.NamedUser(sb.image, user)
}
