package agent

// The home workdir (issue 40): a command whose workdir is "~", alone or
// before "/sub", starts in the home directory of the user it runs as, read
// from the sandbox's /etc/passwd at its start (else its env's HOME), as
// E2B's envd starts commands. The agent reads the file itself, so no
// process runs to ask it.

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strconv"
	"strings"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// homeDir is where a workdir of "~" or "~/sub" points for req: sub under
// the home of req's user; dir itself when it does not start with "~".
// ok is false when the home is unknown or not an absolute path.
func homeDir(req *agentv1.ExecRequest, dir string) (string, bool) {
	sub, isHome := strings.CutPrefix(dir, "~")
	if !isHome || (sub != "" && sub[0] != '/') {
		return dir, true
	}
	uid := uint32(0) // the agent's own identity, root
	if req.GetSetUser() {
		uid = req.GetUid()
	}
	home := passwdHome("/etc/passwd", uid)
	if home == "" {
		home, _ = envValue(req.GetEnv(), "HOME")
	}
	if !filepath.IsAbs(home) {
		return "", false
	}
	return filepath.Join(home, sub), true
}

// passwdHome is the home directory of uid's first entry in the passwd
// file at path, "" when it has none or the file cannot be read.
func passwdHome(path string, uid uint32) string {
	sc := bufio.NewScanner(bytes.NewReader(readBounded(path, passwdBytes)))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 7 {
			continue
		}
		if id, err := strconv.ParseUint(f[2], 10, 32); err == nil && uint32(id) == uid {
			return f[5]
		}
	}
	return ""
}
