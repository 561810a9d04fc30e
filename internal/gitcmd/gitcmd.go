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
// or token, and where they may go.
type Credentials struct {
	Username, Password string
	// For is where they may go (credentials_for); zero: the scheme, host
	// and port of the remote's URL as the caller gave it.
	For Scope
}

// Empty reports whether c has no password.
func (c Credentials) Empty() bool { return c.Password == "" }

// defaultTokenUser is the user name sent with a token when none is given
// (GitHub's for tokens; other hosts take any name).
const defaultTokenUser = "x-access-token"

// AuthEnv is the environment that hands git credentials for the URLs
// under scope for one call, through git's config in the environment
// (GIT_CONFIG_COUNT), never its arguments or a file: an Authorization
// header scoped to those URLs in git's own config (http.<url>.extraHeader,
// which git matches against the URL it actually requests, after any
// insteadOf of the repository's), no credential helper (nothing stored,
// nothing asked), and no hooks (nothing the repository runs sees the
// environment).
func AuthEnv(scope Scope, c Credentials) []string {
	if c.Empty() || scope.IsZero() {
		return nil
	}
	user := c.Username
	if user == "" {
		user = defaultTokenUser
	}
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + c.Password))
	return configEnv(
		"credential.helper", "",
		"core.hooksPath", "/dev/null",
		"http."+scope.String()+".extraHeader", "Authorization: Basic "+basic,
	)
}

// AuthFor is the environment of a call to remote r with credentials c:
// none without a password; credentials go to http(s) remotes only, and
// only to one under c.For (by default r's scheme, host and port).
func AuthFor(r Remote, c Credentials) ([]string, error) {
	if c.Empty() {
		return nil, nil
	}
	if err := c.checkRemote(r, "the remote "+quote(r.URL)); err != nil {
		return nil, err
	}
	scope := c.For
	if scope.IsZero() {
		scope = scopeOf(r)
	}
	return AuthEnv(scope, c), nil
}

// checkRemote refuses credentials for r (named what in the message) if
// it is not http(s), or not under c.For when that is given.
func (c Credentials) checkRemote(r Remote, what string) error {
	if r.Transport != TransportHTTP {
		return errdefs.Malformed("username/password and token go with http(s) remotes, not %s ones", r.Transport).
			WithFix(nil, "use the remote's https:// URL, or an ssh key in the sandbox for ssh")
	}
	if !c.For.IsZero() && !c.For.Covers(r.URL) {
		return errdefs.New(errdefs.CodeGitAuth, "the credentials are for %s (credentials_for), not for %s: they were not sent", c.For, what).
			WithFix(nil, "check the remote's URL (sandbox::git::remote), or give credentials_for that covers it")
	}
	return nil
}

// Scope is where a call's credentials may go: the http(s) URLs under a
// prefix, as git matches its http.<url>.* config: the scheme and host
// exactly, the port after defaults, the path whole or up to a '/'.
type Scope struct {
	scheme, host, port, path string
}

// ParseScope checks credentials_for: a host[:port] (https) or an http(s)
// URL prefix without user, query or fragment. "" is the zero Scope.
func ParseScope(raw string) (Scope, error) {
	bad := func(why string) (Scope, error) {
		return Scope{}, errdefs.Malformed("credentials_for %s is not where credentials may go: %s", quote(raw), why).
			WithFix(nil, "give the remote's host (github.com, for https) or an http(s) URL prefix (https://github.com/acme/)")
	}
	switch {
	case raw == "":
		return Scope{}, nil
	case len(raw) > maxURLBytes:
		return bad("longer than 2048 bytes")
	case hasControl(raw) || strings.ContainsAny(raw, " \t*"):
		return bad("it holds a space, a '*' or a control character")
	case !strings.Contains(raw, "://"):
		if !hostName.MatchString(raw) {
			return bad("not a host name or address (with a port), nor an http(s) URL")
		}
		raw = "https://" + raw + "/"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("it does not parse as a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("the scheme " + quote(u.Scheme) + " is not http or https")
	case !hostName.MatchString(u.Host):
		return bad("the host " + quote(u.Host) + " is not a host name or address")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("a prefix has no user, query or fragment")
	}
	return scopeOfURL(u), nil
}

// scopeOf is the scope of an http(s) remote: its scheme, host and port.
func scopeOf(r Remote) Scope {
	u, err := url.Parse(r.URL)
	if err != nil {
		return Scope{}
	}
	s := scopeOfURL(u)
	s.path = "/"
	return s
}

func scopeOfURL(u *url.URL) Scope {
	s := Scope{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port(), path: u.EscapedPath()}
	if s.port == "" || s.port == defaultPorts[s.scheme] {
		s.port = ""
	}
	if s.path == "" {
		s.path = "/"
	}
	return s
}

var defaultPorts = map[string]string{"http": "80", "https": "443"}

// IsZero reports whether s was not given.
func (s Scope) IsZero() bool { return s.scheme == "" }

// String is s as a URL prefix, as git's config keys name it.
func (s Scope) String() string {
	host := s.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if s.port != "" {
		host += ":" + s.port
	}
	return s.scheme + "://" + host + s.path
}

// Covers reports whether rawURL is under s.
func (s Scope) Covers(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || s.IsZero() {
		return false
	}
	o := scopeOfURL(u)
	if o.scheme != s.scheme || o.host != s.host || o.port != s.port {
		return false
	}
	return o.path == s.path || strings.HasPrefix(o.path, s.path) && (strings.HasSuffix(s.path, "/") || o.path[len(s.path)] == '/')
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
