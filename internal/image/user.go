package image

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/internal/tarfs"
)

// User is the identity an image's processes run as.
type User struct {
	UID uint32
	GID uint32
	// Groups are the supplementary groups.
	Groups []uint32
	// Home is the user's home directory from /etc/passwd, "/" when the
	// user has no entry there.
	Home string
}

// maxAccountFile bounds the size of /etc/passwd and /etc/group.
const maxAccountFile = 4 << 20

// ResolveUser resolves the image's configured user (Config.User) as
// container engines do: "user[:group]", each part a number or a name
// looked up in the image's own /etc/passwd and /etc/group (read inside the
// rootfs, never through a link out of it). Without a group part the
// primary group is the passwd entry's (0 for an unlisted uid) and the
// supplementary groups are those /etc/group lists the user in; with one,
// there are no supplementary groups. An empty User returns nil: processes
// keep the agent's identity, root.
func (img *Image) ResolveUser() (*User, error) {
	spec := img.Config.User
	if spec == "" {
		return nil, nil
	}
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	if userPart == "" || (hasGroup && groupPart == "") {
		return nil, fmt.Errorf("image user %q is not of the form user[:group]", spec)
	}
	root, err := tarfs.OpenRoot(img.Rootfs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	passwd, err := readAccounts(root, "etc/passwd", 7)
	if err != nil {
		return nil, err
	}
	groups, err := readAccounts(root, "etc/group", 4)
	if err != nil {
		return nil, err
	}

	u := &User{Home: "/"}
	var entry []string
	if id, ok := parseID(userPart); ok {
		u.UID = id
		entry = findAccount(passwd, func(e []string) bool { return e[2] == userPart })
	} else if entry = findAccount(passwd, func(e []string) bool { return e[0] == userPart }); entry == nil {
		return nil, fmt.Errorf("image user %q is not in the image's /etc/passwd", userPart)
	}
	if entry != nil {
		uid, ok1 := parseID(entry[2])
		gid, ok2 := parseID(entry[3])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("the image's /etc/passwd entry of %q has a bad uid or gid", entry[0])
		}
		u.UID, u.GID, u.Home = uid, gid, entry[5]
		if u.Home == "" {
			u.Home = "/"
		}
	}

	switch {
	case hasGroup:
		if id, ok := parseID(groupPart); ok {
			u.GID = id
			break
		}
		g := findAccount(groups, func(e []string) bool { return e[0] == groupPart })
		if g == nil {
			return nil, fmt.Errorf("image group %q is not in the image's /etc/group", groupPart)
		}
		gid, ok := parseID(g[2])
		if !ok {
			return nil, fmt.Errorf("the image's /etc/group entry of %q has a bad gid", groupPart)
		}
		u.GID = gid
	case entry != nil:
		for _, g := range groups {
			if !slices.Contains(strings.Split(g[3], ","), entry[0]) {
				continue
			}
			if gid, ok := parseID(g[2]); ok && !slices.Contains(u.Groups, gid) {
				u.Groups = append(u.Groups, gid)
			}
		}
	}
	return u, nil
}

// readAccounts reads a colon-separated account file of the image, keeping
// the lines with at least fields fields. A missing file has no entries.
func readAccounts(root *tarfs.Root, rel string, fields int) ([][]string, error) {
	b, err := root.ReadFile(rel, maxAccountFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the image's /%s: %w", rel, err)
	}
	var out [][]string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Split(line, ":"); len(f) >= fields {
			out = append(out, f)
		}
	}
	return out, nil
}

// findAccount returns the first entry match accepts, or nil.
func findAccount(entries [][]string, match func([]string) bool) []string {
	for _, e := range entries {
		if match(e) {
			return e
		}
	}
	return nil
}

// parseID parses a decimal uid or gid.
func parseID(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}
