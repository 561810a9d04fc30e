package runtime

import (
	"path"
	"strings"
)

// AgentPath is where every runtime puts the hutch-agent binary inside a
// sandbox, and runs it from as PID 1. Images carry an empty regular file
// there as its mount point.
const AgentPath = "/.hutch/hutch-agent"

// DefaultPath is the PATH of a sandbox's processes when their image sets
// none, and of the agent itself.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ReservedPath reports whether a mount at path p (absolute and clean)
// would cover the sandbox's root or a directory every runtime sets up
// itself: /proc, /dev, /sys, and the agent's directory, or anything in
// them. Spec.Mounts never name one.
func ReservedPath(p string) bool {
	if p == "/" {
		return true
	}
	for _, dir := range []string{"/proc", "/dev", "/sys", path.Dir(AgentPath)} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}
