package gitcmd

// Checks of the values a caller hands to git. Each value sits in git's
// argument vector after the options git parses (and after --
// or --end-of-options where git 2.39 takes them), but none is let through
// that git could read as an option or as something other than what its
// field names: refs follow git check-ref-format, URLs are of the allowed
// transports only, and no value holds a NUL or a control character.

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Bounds of the values.
const (
	maxRefBytes   = 255
	maxPathBytes  = 4096
	maxURLBytes   = 2048
	maxPaths      = 1024
	maxValueBytes = 64 << 10
)

// quote is v as an error message may show it: escaped and clipped.
func quote(v string) string { return `"` + safetext.Line(v, 96) + `"` }

// hasControl reports whether s holds an ASCII control character (NUL
// included) or DEL, or is not UTF-8.
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// CheckRef checks a branch, tag or remote name as git check-ref-format
// --allow-onelevel does, and refuses what could be an option. field
// names it in the message.
func CheckRef(field, name string) error {
	bad := func(why string) error {
		return errdefs.Malformed("%s %s is not a valid ref name: %s", field, quote(name), why)
	}
	switch {
	case name == "":
		return errdefs.Malformed("%s is empty", field)
	case len(name) > maxRefBytes:
		return bad("longer than 255 bytes")
	case strings.HasPrefix(name, "-"):
		return bad("it begins with '-'")
	case hasControl(name):
		return bad("it holds a control character")
	case strings.ContainsAny(name, " ~^:?*[\\"):
		return bad(`it holds one of space ~ ^ : ? * [ \`)
	case strings.Contains(name, ".."):
		return bad("it holds '..'")
	case strings.Contains(name, "@{") || name == "@":
		return bad("it holds '@{' or is '@'")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("it begins or ends with '/' or holds '//'")
	case strings.HasSuffix(name, "."):
		return bad("it ends with '.'")
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return bad("a part begins with '.' or ends with '.lock'")
		}
	}
	return nil
}

// revSuffix is what may follow a revision's base: ~N, ^N, @{N}, @{u},
// @{upstream}, @{push}.
var revSuffix = regexp.MustCompile(`^([~^][0-9]{0,6}|@\{([0-9]{1,6}|u|upstream|push)\})*$`)

// CheckRev checks a revision: a ref name, HEAD or a (partial) hash,
// followed by ~N, ^N or @{…}. With ranges, A..B and A...B are allowed
// too (log, diff).
func CheckRev(field, rev string, ranges bool) error {
	if ranges {
		for _, sep := range []string{"...", ".."} {
			if a, b, ok := strings.Cut(rev, sep); ok {
				if a == "" && b == "" {
					break
				}
				for _, side := range []string{a, b} {
					if side == "" {
						continue
					}
					if err := CheckRev(field, side, false); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
	if rev == "" {
		return errdefs.Malformed("%s is empty", field)
	}
	if strings.HasPrefix(rev, "-") {
		return errdefs.Malformed("%s %s is not a revision: it begins with '-'", field, quote(rev))
	}
	base, suffix := rev, ""
	if i := strings.IndexAny(rev, "~^"); i >= 0 {
		base, suffix = rev[:i], rev[i:]
	}
	if i := strings.Index(base, "@{"); i >= 0 {
		base, suffix = base[:i], base[i:]+suffix
	}
	if !revSuffix.MatchString(suffix) {
		return errdefs.Malformed("%s %s is not a revision: %s is not ~N, ^N or @{…}", field, quote(rev), quote(suffix))
	}
	if base == "" || base == "@" || base == "HEAD" {
		if base == "" && suffix == "" {
			return errdefs.Malformed("%s is empty", field)
		}
		return nil
	}
	return CheckRef(field, base)
}

// CheckRepoPath checks the repository's directory: absolute, without a
// NUL or control character.
func CheckRepoPath(p string) error {
	switch {
	case !path.IsAbs(p):
		return errdefs.Malformed("path %s must be an absolute path", quote(p))
	case len(p) > maxPathBytes:
		return errdefs.Malformed("path is longer than %d bytes", maxPathBytes)
	case hasControl(p):
		return errdefs.Malformed("path %s holds a control character", quote(p))
	}
	return nil
}

// CheckPaths checks paths inside a repository: each goes after -- and is
// taken literally (GIT_LITERAL_PATHSPECS), so only the empty path and a
// NUL, which cannot be an argument, are refused.
func CheckPaths(paths []string) error {
	if len(paths) > maxPaths {
		return errdefs.Malformed("paths names %d paths, more than %d", len(paths), maxPaths)
	}
	for i, p := range paths {
		switch {
		case p == "":
			return errdefs.Malformed("paths[%d] is empty", i)
		case len(p) > maxPathBytes:
			return errdefs.Malformed("paths[%d] is longer than %d bytes", i, maxPathBytes)
		case strings.IndexByte(p, 0) >= 0 || !utf8.ValidString(p):
			return errdefs.Malformed("paths[%d] holds a NUL or is not UTF-8", i)
		}
	}
	return nil
}

// Transports of remote URLs.
const (
	TransportHTTP  = "http" // http and https
	TransportSSH   = "ssh"  // ssh:// and user@host:path
	TransportGit   = "git"  // git://
	TransportLocal = "local"
)

// Remote is a remote URL taken apart.
type Remote struct {
	// URL is what git is given and may store: without a password.
	URL       string
	Transport string
	// Username and Password were in an http(s) URL.
	Username, Password string
	// LocalPath is the directory of a local remote, to check that it
	// exists.
	LocalPath string
}

// scpHost is the host of an scp-like ssh address (user@host:path).
var scpHost = regexp.MustCompile(`^([A-Za-z0-9._][A-Za-z0-9._-]{0,63}@)?([A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\])$`)

// hostName is a URL's host (a name or address, with an optional port).
var hostName = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\])(:[0-9]{1,5})?$`)

// ParseRemoteURL checks a remote URL: http, https, ssh (URL or scp-like
// user@host:path), git, or an absolute path (or file:// URL) in the
// sandbox. Credentials in an http(s) URL are taken out of URL and
// returned; other transports take a user name only (ssh).
func ParseRemoteURL(field, raw string) (Remote, error) {
	bad := func(why string) (Remote, error) {
		return Remote{}, errdefs.Malformed("%s is not a remote this call takes: %s", field, why).
			WithFix(nil, "give an http(s)://, ssh://, git:// URL, user@host:path, or an absolute path of a repository in the sandbox")
	}
	switch {
	case raw == "":
		return Remote{}, errdefs.Malformed("%s is empty", field)
	case len(raw) > maxURLBytes:
		return bad("longer than 2048 bytes")
	case hasControl(raw) || strings.ContainsAny(raw, " \t"):
		return bad("it holds a space or a control character")
	case strings.HasPrefix(raw, "-"):
		return bad("it begins with '-'")
	case strings.HasPrefix(raw, "/"):
		return Remote{URL: raw, Transport: TransportLocal, LocalPath: path.Clean(raw)}, nil
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme || strings.Contains(scheme, "/") {
		// git's transport::address helpers (ext::, fd::) never.
		if strings.Contains(raw, "::") {
			return bad("remote helpers (transport::address) are not allowed")
		}
		host, p, ok := strings.Cut(raw, ":")
		if !ok || strings.Contains(host, "/") {
			return bad("a relative path or an unknown form")
		}
		if !scpHost.MatchString(host) || p == "" || strings.HasPrefix(p, "-") {
			return bad("not user@host:path")
		}
		return Remote{URL: raw, Transport: TransportSSH}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("it does not parse as a URL")
	}
	r := Remote{Transport: TransportHTTP}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "ssh":
		r.Transport = TransportSSH
	case "git":
		r.Transport = TransportGit
	case "file":
		if u.Host != "" && u.Host != "localhost" || u.User != nil || !path.IsAbs(u.Path) || u.RawQuery != "" || u.Fragment != "" {
			return bad("a file URL names an absolute path, nothing else")
		}
		return Remote{URL: raw, Transport: TransportLocal, LocalPath: path.Clean(u.Path)}, nil
	default:
		return bad("the scheme " + quote(u.Scheme) + " is not http, https, ssh or git")
	}
	if !hostName.MatchString(u.Host) {
		return bad("the host " + quote(u.Host) + " is not a host name or address")
	}
	if u.User != nil {
		pass, hasPass := u.User.Password()
		switch r.Transport {
		case TransportHTTP:
			r.Username, r.Password = u.User.Username(), pass
			u.User = nil
		case TransportSSH:
			if hasPass {
				return bad("an ssh URL takes no password")
			}
		default:
			return bad("a git:// URL takes no user")
		}
	}
	r.URL = u.String()
	return r, nil
}

// Redact is url with the password of its user info, if any, replaced by
// ***: for showing a URL that something other than hutch stored.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	u.User = url.UserPassword(u.User.Username(), "***")
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}

// configSection and configName are the parts of a config key that git
// restricts; a subsection between them is anything but a newline or NUL.
var (
	configSection = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)
	configName    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
)

// CheckConfigKey checks a config key: section[.subsection].name.
func CheckConfigKey(key string) error {
	bad := func() error {
		return errdefs.Malformed("key %s is not a config key (section.name or section.subsection.name)", quote(key))
	}
	if len(key) > maxRefBytes*2 || hasControl(key) || strings.HasPrefix(key, "-") {
		return bad()
	}
	first, rest, ok := strings.Cut(key, ".")
	if !ok {
		return bad()
	}
	i := strings.LastIndexByte(rest, '.')
	name := rest[i+1:]
	if !configSection.MatchString(first) || strings.Contains(first, ".") || !configName.MatchString(name) {
		return bad()
	}
	return nil
}

// CheckConfigValue checks a config value: no NUL, bounded.
func CheckConfigValue(v string) error {
	if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) || len(v) > maxValueBytes {
		return errdefs.Malformed("value holds a NUL, is not UTF-8 or is longer than %d bytes", maxValueBytes)
	}
	return nil
}

// CheckText checks a one-line value (an author's name or email): no
// control character, bounded.
func CheckText(field, v string) error {
	if hasControl(v) || len(v) > 256 || strings.ContainsAny(v, "<>") {
		return errdefs.Malformed("%s %s holds a control character, < or >, or is longer than 256 bytes", field, quote(v))
	}
	return nil
}
