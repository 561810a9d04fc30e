// Package gitcmd is git for sandbox::git::*: the argument vectors and
// environments of git's commands (run inside a sandbox by the manager,
// never through a shell), the checks that keep every value a caller
// gives from being read as an option, the parsers of git's
// machine-readable output, and the S-codes of git's failures.
package gitcmd

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Cmd is one run of git.
type Cmd struct {
	// Args follow "git --no-pager -C DIR".
	Args []string
	// Dir is the directory git runs in; "" is the repository's.
	Dir string
	// Env is added to the call's environment, over the caller's.
	Env []string
	// Stdin is git's input (a commit message).
	Stdin []byte
	// MaxOutput caps stdout in bytes; 0 is the daemon's cap.
	MaxOutput int
}

// Argv is the whole argument vector of c, run in dir (absolute, so that
// it cannot be an option).
func (c Cmd) Argv(dir string) []string {
	return append([]string{"git", "--no-pager", "-C", dir}, c.Args...)
}

// BaseEnv is the environment of every run, over the caller's: git never
// asks on a terminal or opens an editor or pager, speaks English (its
// messages are mapped to S-codes), takes paths literally (no globs or
// pathspec magic), and reaches remotes only over the allowed transports.
var BaseEnv = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_EDITOR=true",
	"GIT_MERGE_AUTOEDIT=no",
	"GIT_PAGER=cat",
	"LC_ALL=C",
	"GIT_LITERAL_PATHSPECS=1",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_ALLOW_PROTOCOL=http:https:ssh:git:file",
}

// Credentials are what a call gives a remote: a user name and a password
// or token.
type Credentials struct {
	Username, Password string
}

// Empty reports whether c has no password.
func (c Credentials) Empty() bool { return c.Password == "" }

// defaultTokenUser is the user name sent with a token when none is given
// (GitHub's for tokens; other hosts take any name).
const defaultTokenUser = "x-access-token"

// AuthEnv is the environment that hands git credentials for the http(s)
// remote remoteURL for one call, through git's config in the environment
// (GIT_CONFIG_COUNT), never its arguments or a file: an Authorization
// header for the remote's scheme, host and port only, no credential
// helper (nothing stored, nothing asked), and no hooks (nothing the
// repository runs sees the environment).
func AuthEnv(remoteURL string, c Credentials) []string {
	u, err := url.Parse(remoteURL)
	if err != nil || c.Empty() {
		return nil
	}
	user := c.Username
	if user == "" {
		user = defaultTokenUser
	}
	scope := strings.ToLower(u.Scheme) + "://" + u.Host + "/"
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + c.Password))
	return configEnv(
		"credential.helper", "",
		"core.hooksPath", "/dev/null",
		"http."+scope+".extraHeader", "Authorization: Basic "+basic,
	)
}

// AuthFor is the environment of a call to remote r with credentials c:
// none without a password; credentials go to http(s) remotes only.
func AuthFor(r Remote, c Credentials) ([]string, error) {
	if c.Empty() {
		return nil, nil
	}
	if r.Transport != TransportHTTP {
		return nil, errdefs.Malformed("username/password and token go with http(s) remotes, not %s ones", r.Transport).
			WithFix(nil, "use the remote's https:// URL, or an ssh key in the sandbox for ssh")
	}
	return AuthEnv(r.URL, c), nil
}

// configEnv is the environment that sets config keys and values (pairs)
// for one run of git.
func configEnv(pairs ...string) []string {
	n := len(pairs) / 2
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(n)}
	for i := 0; i < n; i++ {
		k := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+k+"="+pairs[2*i], "GIT_CONFIG_VALUE_"+k+"="+pairs[2*i+1])
	}
	return env
}

// identityEnv is the environment that makes name and email the author
// and committer of the commits of a run (git's config where empty).
func identityEnv(name, email string) []string {
	var env []string
	if name != "" {
		env = append(env, "GIT_AUTHOR_NAME="+name, "GIT_COMMITTER_NAME="+name)
	}
	if email != "" {
		env = append(env, "GIT_AUTHOR_EMAIL="+email, "GIT_COMMITTER_EMAIL="+email)
	}
	return env
}
