package gitcmd

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestCheckRef(t *testing.T) {
	for _, ok := range []string{"main", "feature/x-1", "v1.2.3", "release_2026", "a.b/c", "ünïcode", "HEAD"} {
		if err := CheckRef("branch", ok); err != nil {
			t.Errorf("CheckRef(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{
		"", "-f", "--upload-pack=touch /tmp/pwned", "--force", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`,
		"a@{1}", "@", "/a", "a/", "a//b", ".hidden", "a/.b", "a.lock", "a/b.lock", "a.", "a\x00b", "a\nb", "a\tb", "a\x7f",
		string(make([]byte, 256)), "a\xffb",
	} {
		if err := CheckRef("branch", bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("CheckRef(%q) = %v, want S001", bad, err)
		}
	}
}

func TestCheckRev(t *testing.T) {
	for _, ok := range []string{"HEAD", "HEAD~1", "HEAD^", "HEAD^2~3", "main", "origin/main", "@{u}", "main@{upstream}", "HEAD@{1}", "@~2", "abc1234", oidA, "v1.0"} {
		if err := CheckRev("ref", ok, false); err != nil {
			t.Errorf("CheckRev(%q) = %v, want nil", ok, err)
		}
	}
	for _, ok := range []string{"main..feature", "HEAD~3..", "..origin/main", "a...b"} {
		if err := CheckRev("ref", ok, true); err != nil {
			t.Errorf("CheckRev(%q, ranges) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "-p", "--output=/etc/passwd", "HEAD~x", "main@{-1}", "HEAD@{now}", "a b", "HEAD:file", "..", "a....b", "main..-x", "@{u}@", "x\x00"} {
		if err := CheckRev("ref", bad, true); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("CheckRev(%q) = %v, want S001", bad, err)
		}
	}
	if err := CheckRev("ref", "a..b", false); err == nil {
		t.Error("a range was taken where only a revision is")
	}
}

func TestCheckPaths(t *testing.T) {
	if err := CheckPaths([]string{"a.txt", "dir/b c", "--exec=sh", "-rf", "/abs/path", ":(glob)*"}); err != nil {
		t.Errorf("paths after -- are taken literally, none refused: %v", err)
	}
	for _, bad := range [][]string{{""}, {"a\x00b"}, {"\xff"}, make([]string, maxPaths+1)} {
		if err := CheckPaths(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("CheckPaths(%q) = %v, want S001", bad, err)
		}
	}
	for _, bad := range []string{"relative", "", "/a\nb"} {
		if err := CheckRepoPath(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("CheckRepoPath(%q) = %v, want S001", bad, err)
		}
	}
}

func TestParseRemoteURL(t *testing.T) {
	tests := []struct {
		raw                        string
		url, transport, user, pass string
		local                      string
	}{
		{"https://example.com/o/r.git", "https://example.com/o/r.git", TransportHTTP, "", "", ""},
		{"http://10.0.0.1:8080/r.git", "http://10.0.0.1:8080/r.git", TransportHTTP, "", "", ""},
		{"https://ann:s3cr%40t@example.com/r.git", "https://example.com/r.git", TransportHTTP, "ann", "s3cr@t", ""},
		{"https://tok@example.com/r", "https://example.com/r", TransportHTTP, "tok", "", ""},
		{"ssh://git@example.com:2222/r.git", "ssh://git@example.com:2222/r.git", TransportSSH, "", "", ""},
		{"git@github.com:owner/repo.git", "git@github.com:owner/repo.git", TransportSSH, "", "", ""},
		{"github.com:owner/repo", "github.com:owner/repo", TransportSSH, "", "", ""},
		{"git://example.com/r.git", "git://example.com/r.git", TransportGit, "", "", ""},
		{"/srv/repo.git", "/srv/repo.git", TransportLocal, "", "", "/srv/repo.git"},
		{"file:///srv/repo/../other", "file:///srv/repo/../other", TransportLocal, "", "", "/srv/other"},
	}
	for _, tt := range tests {
		r, err := ParseRemoteURL("url", tt.raw)
		if err != nil {
			t.Errorf("ParseRemoteURL(%q) = %v", tt.raw, err)
			continue
		}
		if r.URL != tt.url || r.Transport != tt.transport || r.Username != tt.user || r.Password != tt.pass || r.LocalPath != tt.local {
			t.Errorf("ParseRemoteURL(%q) = %+v, want %+v", tt.raw, r, tt)
		}
	}
	for _, bad := range []string{
		"", "-uhttp://x", "--upload-pack=touch /tmp/x", "ext::sh -c touch% /tmp/pwned", "ext::sh", "fd::17", "ftp://example.com/r",
		"ftps://x/r", "relative/path", "./repo", "../repo", "https://exa mple.com/r", "https://example.com/r\n", "ssh://-oProxyCommand=x/r",
		"ssh://u:pw@example.com/r", "git://u@example.com/r", "-oProxyCommand=x:r", "host:-r", "file://remote/x",
		"https:///no-host", "https://-x/r",
	} {
		if _, err := ParseRemoteURL("url", bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("ParseRemoteURL(%q) = %v, want S001", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:secret@example.com/r": "https://u:***@example.com/r",
		"https://u@example.com/r":        "https://u@example.com/r",
		"git@example.com:r.git":          "git@example.com:r.git",
		"/srv/r":                         "/srv/r",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckConfigKey(t *testing.T) {
	for _, ok := range []string{"user.name", "core.hooksPath", "remote.origin.url", "branch.feature/x.remote", "url.https://x/.insteadOf", "my-section.sub sec.key2"} {
		if err := CheckConfigKey(ok); err != nil {
			t.Errorf("CheckConfigKey(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "user", "-l", "--list", "user.", ".name", "user.1name", "user.na me", "a\nb.c", "sec_tion.name", "user.name\x00"} {
		if err := CheckConfigKey(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("CheckConfigKey(%q) = %v, want S001", bad, err)
		}
	}
}

func TestScope(t *testing.T) {
	for _, tt := range []struct {
		raw, want string
		covers    []string
		not       []string
	}{
		{"github.com", "https://github.com/", []string{"https://github.com/o/r.git", "https://GitHub.com:443/o/r", "https://u@github.com/r"},
			[]string{"http://github.com/o/r.git", "https://github.com:8443/r", "https://github.com.evil/r", "https://evil/github.com/r"}},
		{"https://github.com/acme", "https://github.com/acme", []string{"https://github.com/acme", "https://github.com/acme/r.git"},
			[]string{"https://github.com/acmeevil/r.git", "https://github.com/other/r.git", "https://github.com/"}},
		{"https://github.com/acme/", "https://github.com/acme/", []string{"https://github.com/acme/r.git"}, []string{"https://github.com/acme"}},
		{"http://10.0.0.1:8080/", "http://10.0.0.1:8080/", []string{"http://10.0.0.1:8080/r.git"}, []string{"http://10.0.0.1/r.git", "https://10.0.0.1:8080/r.git"}},
		{"HTTPS://Git.Example.com:443", "https://git.example.com/", []string{"https://git.example.com/r"}, nil},
		{"[::1]:9000", "https://[::1]:9000/", []string{"https://[::1]:9000/r"}, []string{"https://[::2]:9000/r"}},
	} {
		s, err := ParseScope(tt.raw)
		if err != nil || s.String() != tt.want {
			t.Errorf("ParseScope(%q) = %s, %v; want %s", tt.raw, s, err, tt.want)
			continue
		}
		for _, u := range tt.covers {
			if !s.Covers(u) {
				t.Errorf("%s does not cover %s", s, u)
			}
		}
		for _, u := range tt.not {
			if s.Covers(u) {
				t.Errorf("%s covers %s", s, u)
			}
		}
	}
	for _, bad := range []string{"ssh://github.com/", "git@github.com:r", "https://u:p@github.com/", "https://github.com/?x", "https://github.com/#x",
		"*.github.com", "https://*.github.com/", "github.com/acme", "-x", "a b", "https://", "file:///srv/r", "github.com\n"} {
		if _, err := ParseScope(bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("ParseScope(%q) = %v, want S001", bad, err)
		}
	}
	if s, err := ParseScope(""); err != nil || !s.IsZero() {
		t.Errorf(`ParseScope("") = %v, %v; want the zero scope`, s, err)
	}
}
