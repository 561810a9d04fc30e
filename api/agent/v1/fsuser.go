package agentv1

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FsUserKey is the gRPC metadata key that names the user an Fs call runs
// as. The host sets it on every call of the Fs service when the image has
// a user; a call without it runs as the agent (root). It is the one way
// the agent learns whose permissions a filesystem operation has: every Fs
// method, present and future, gets it through the interceptors on both
// sides.
const FsUserKey = "hutch-fs-user"

// maxFsUserGroups bounds the supplementary groups an FsUser may carry
// (Linux's NGROUPS_MAX).
const maxFsUserGroups = 65536

// FsUser is the identity of a filesystem call: uid, primary gid and
// supplementary groups, as an exec of the image's user gets them.
type FsUser struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// IsFsMethod reports whether fullMethod ("/pkg.Service/Method") belongs to
// the Fs service.
func IsFsMethod(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/"+Fs_ServiceDesc.ServiceName+"/")
}

// String encodes u as the value of FsUserKey: "uid:gid:g1,g2,...".
func (u *FsUser) String() string {
	groups := make([]string, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%d:%d:%s", u.UID, u.GID, strings.Join(groups, ","))
}

// ParseFsUser decodes a value of FsUserKey.
func ParseFsUser(s string) (*FsUser, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("fs user %q: want uid:gid:groups", s)
	}
	ids := []string{parts[0], parts[1]}
	if parts[2] != "" {
		ids = append(ids, strings.Split(parts[2], ",")...)
	}
	if len(ids) > 2+maxFsUserGroups {
		return nil, errors.New("fs user: too many groups")
	}
	nums := make([]uint32, len(ids))
	for i, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("fs user %q: %q is not an id", s, id)
		}
		nums[i] = uint32(n)
	}
	u := &FsUser{UID: nums[0], GID: nums[1]}
	if len(nums) > 2 {
		u.Groups = nums[2:]
	}
	return u, nil
}
