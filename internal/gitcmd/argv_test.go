package gitcmd

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// secretsIn reports which of secrets (and their base64 forms as a basic
// header carries them) appear in any of strs.
func secretsIn(strs []string, user string, secrets ...string) []string {
	var found []string
	for _, s := range secrets {
		forms := []string{s, base64.StdEncoding.EncodeToString([]byte(user + ":" + s))}
		for _, f := range forms {
			for _, v := range strs {
				if strings.Contains(v, f) {
					found = append(found, v)
				}
			}
		}
	}
	return found
}

func TestCredentialsNeverInArgv(t *testing.T) {
	const pw, token = "pw-S3CRET", "tok-S3CRET"
	t.Run("password in the URL", func(t *testing.T) {
		req := api.GitCloneRequest{URL: "https://ann:" + pw + "@example.com:8443/r.git"}
		r, err := ParseRemoteURL("url", req.URL)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := Creds(req.GitAuth, &r)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Clone(req, r, creds, "/work/r")
		if err != nil {
			t.Fatal(err)
		}
		argv := c.Argv("/")
		if found := secretsIn(argv, "ann", pw); len(found) > 0 || slices.Contains(argv, req.URL) {
			t.Fatalf("the password is in argv %q", argv)
		}
		if !slices.Contains(argv, "https://example.com:8443/r.git") {
			t.Errorf("argv %q does not clone the URL without its credentials", argv)
		}
		header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ann:"+pw))
		wantEnv := []string{"GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=",
			"GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1=/dev/null",
			"GIT_CONFIG_KEY_2=http.https://example.com:8443/.extraHeader", "GIT_CONFIG_VALUE_2=" + header}
		if !slices.Equal(c.Env, wantEnv) {
			t.Errorf("env = %q, want %q", c.Env, wantEnv)
		}
	})
	t.Run("token", func(t *testing.T) {
		req := api.GitPushRequest{GitRemoteCall: api.GitRemoteCall{Remote: "https://example.com/r.git", Branch: "main", GitAuth: api.GitAuth{Token: token}}}
		rc, err := ParseRemoteCall(req.GitRemoteCall)
		if err != nil || rc.NeedsURL() {
			t.Fatal(err)
		}
		c := must(Push(req, rc.Arg))
		env, err := rc.Auth("")
		if err != nil {
			t.Fatal(err)
		}
		if found := secretsIn(c.Argv("/repo"), defaultTokenUser, token); len(found) > 0 {
			t.Fatalf("the token is in argv %q", c.Argv("/repo"))
		}
		if found := secretsIn(env, defaultTokenUser, token); len(found) != 1 {
			t.Errorf("the token is not in the environment once as a basic header of %s: %q", defaultTokenUser, env)
		}
		// The secret never prints either.
		if s := strings.Join([]string{req.Token.String(), req.Password.GoString()}, " "); strings.Contains(s, token) {
			t.Errorf("a Secret printed itself: %s", s)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r, _ := ParseRemoteURL("url", "https://ann:"+pw+"@example.com/r.git")
		for name, auth := range map[string]api.GitAuth{
			"password and token":       {Password: pw, Token: token},
			"twice":                    {Password: pw},
			"a user name with a colon": {Username: "a:b", Password: pw},
			"a line break":             {Password: "a\nb"},
		} {
			if _, err := Creds(auth, &r); !errdefs.Is(err, errdefs.CodeMalformed) {
				t.Errorf("%s: %v, want S001", name, err)
			}
		}
		ssh, _ := ParseRemoteURL("url", "git@example.com:r.git")
		if _, err := AuthFor(ssh, Credentials{Password: pw}); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("credentials for an ssh remote: %v, want S001", err)
		}
		if env, err := AuthFor(r, Credentials{Username: "only"}); env != nil || err != nil {
			t.Errorf("a user name alone: %q, %v; want no environment", env, err)
		}
	})
	t.Run("stored", func(t *testing.T) {
		v := "https://ann:" + pw + "@example.com/r.git"
		if _, err := Config(api.GitConfigRequest{Key: "remote.origin.url", Value: &v}); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("config of a remote URL with a password: %v, want S001", err)
		}
	})
}

// TestValuesAfterTheirTerminator checks where every builder puts a
// caller's values: after --end-of-options or --, glued to their option,
// or (checkout, reset: git 2.39 mishandles --end-of-options there)
// checked to not begin with '-'.
func TestValuesAfterTheirTerminator(t *testing.T) {
	val := "feature/v"
	after := func(args []string, v string) bool {
		i := slices.Index(args, v)
		for j := 0; j < i; j++ {
			if args[j] == "--end-of-options" || args[j] == "--" {
				return true
			}
		}
		return false
	}
	must := func(c Cmd, err error) Cmd {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for name, c := range map[string]Cmd{
		"add":           must(Add([]string{val})),
		"log":           must(Log(api.GitLogRequest{Ref: val})),
		"log path":      must(Log(api.GitLogRequest{Paths: []string{val}})),
		"diff":          must(Diff(api.GitDiffRequest{Ref: val}, 10)),
		"branch":        must(BranchChange(api.GitBranchRequest{Name: val})),
		"branch delete": must(BranchChange(api.GitBranchRequest{Name: val, Delete: true})),
		"restore":       must(Restore(api.GitRestoreRequest{Paths: []string{val}})),
		"reset paths":   must(Reset(api.GitResetRequest{Paths: []string{val}})),
		"config":        must(Config(api.GitConfigRequest{Key: "a." + "b", Value: &val})),
		"remote add":    RemoteAdd("origin", val, false),
		"fetch":         must(Fetch(api.GitFetchRequest{GitRemoteCall: api.GitRemoteCall{Branch: val}}, "origin")),
		"pull":          must(Pull(api.GitPullRequest{GitRemoteCall: api.GitRemoteCall{Branch: val}}, "origin")),
		"push":          must(Push(api.GitPushRequest{GitRemoteCall: api.GitRemoteCall{Branch: val}}, "origin")),
		"init":          must(Init(api.GitInitRequest{}, "/"+val)),
	} {
		v := val
		if name == "init" {
			v = "/" + val
		}
		if !after(c.Args, v) {
			t.Errorf("%s: %q is not after --end-of-options or -- in %q", name, v, c.Args)
		}
	}
	if c := must(Clone(api.GitCloneRequest{Branch: val}, Remote{URL: "https://x/r"}, Credentials{}, "/r")); !slices.Contains(c.Args, "--branch="+val) || !after(c.Args, "https://x/r") {
		t.Errorf("clone: %q", c.Args)
	}
	if c := must(Checkout(api.GitCheckoutRequest{Ref: val})); !slices.Equal(c.Args[len(c.Args)-2:], []string{val, "--"}) {
		t.Errorf("checkout: %q, want the ref then --", c.Args)
	}
	// The values that could be options are refused by the builders.
	for name, err := range map[string]error{
		"checkout":     second(Checkout(api.GitCheckoutRequest{Ref: "--orphan=x"})),
		"checkout -b":  second(Checkout(api.GitCheckoutRequest{Ref: "-f", Create: true})),
		"start point":  second(Checkout(api.GitCheckoutRequest{Ref: "x", Create: true, StartPoint: "--detach"})),
		"reset":        second(Reset(api.GitResetRequest{Ref: "--hard"})),
		"reset mode":   second(Reset(api.GitResetRequest{Mode: "keep"})),
		"restore":      second(Restore(api.GitRestoreRequest{Paths: []string{"a"}, Source: "-p"})),
		"push branch":  second(Push(api.GitPushRequest{GitRemoteCall: api.GitRemoteCall{Branch: "--mirror"}}, "origin")),
		"clone branch": second(Clone(api.GitCloneRequest{Branch: "--upload-pack=touch /tmp/pwned"}, Remote{URL: "https://x/r"}, Credentials{}, "/r")),
		"remote":       second(ParseRemoteArg("--receive-pack=touch /tmp/pwned")),
		"init branch":  second(Init(api.GitInitRequest{InitialBranch: "--template=/tmp"}, "/r")),
		"config key":   second(Config(api.GitConfigRequest{Key: "--list"})),
		"log count":    second(Log(api.GitLogRequest{MaxCount: MaxLogCount + 1})),
		"commit":       second(Commit(api.GitCommitRequest{})),
		"author":       second(Commit(api.GitCommitRequest{Message: "m", GitIdentity: api.GitIdentity{AuthorName: "a\nb"}})),
	} {
		if !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%s: %v, want S001", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestCommitMessageOnStdin(t *testing.T) {
	c, err := Commit(api.GitCommitRequest{Message: "--amend\n\nbody", GitIdentity: api.GitIdentity{AuthorName: "Ann", AuthorEmail: "ann@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Stdin) != "--amend\n\nbody" || slices.Contains(c.Args, "--amend") || !slices.Contains(c.Args, "--file=-") {
		t.Errorf("commit: args %q, stdin %q", c.Args, c.Stdin)
	}
	if !slices.Contains(c.Env, "GIT_AUTHOR_NAME=Ann") || !slices.Contains(c.Env, "GIT_COMMITTER_EMAIL=ann@example.com") {
		t.Errorf("commit env %q", c.Env)
	}
}

func TestCloneDir(t *testing.T) {
	for url, want := range map[string]string{
		"https://example.com/o/repo.git": "/w/repo",
		"https://example.com/o/repo/":    "/w/repo",
		"git@example.com:o/repo.git":     "/w/repo",
		"/srv/repo/.git":                 "/w/repo",
		"host:repo":                      "/w/repo",
		"https://example.com/":           "/w/example.com",
		"https://example.com/o/..":       "/w/repo",
	} {
		if got := CloneDir("/w", url); got != want {
			t.Errorf("CloneDir(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestCredentialsFor(t *testing.T) {
	r, _ := ParseRemoteURL("url", "https://example.com/acme/r.git")
	// Without credentials_for, a clone's credentials are for its host.
	c := must(Clone(api.GitCloneRequest{}, r, must2(Creds(api.GitAuth{Token: "t"}, &r)), "/r"))
	if !slices.Contains(c.Env, "GIT_CONFIG_KEY_2=http.https://example.com/.extraHeader") {
		t.Errorf("clone env %q", c.Env)
	}
	// With it, they are scoped to it, and a URL outside it is S271.
	c = must(Clone(api.GitCloneRequest{}, r, must2(Creds(api.GitAuth{Token: "t", CredentialsFor: "https://example.com/acme/"}, &r)), "/r"))
	if !slices.Contains(c.Env, "GIT_CONFIG_KEY_2=http.https://example.com/acme/.extraHeader") {
		t.Errorf("clone env %q", c.Env)
	}
	if _, err := Clone(api.GitCloneRequest{}, r, must2(Creds(api.GitAuth{Token: "t", CredentialsFor: "https://example.com/other/"}, &r)), "/r"); !errdefs.Is(err, errdefs.CodeGitAuth) {
		t.Errorf("a clone outside credentials_for: %v, want S271", err)
	}
	// credentials_for without a password or token is S001; so are
	// credentials for a remote given by name without it.
	if _, err := Creds(api.GitAuth{Username: "ann", CredentialsFor: "example.com"}, nil); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("credentials_for alone: %v, want S001", err)
	}
	if _, err := ParseRemoteCall(api.GitRemoteCall{Remote: "origin", GitAuth: api.GitAuth{Token: "t"}}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("a token for origin without credentials_for: %v, want S001", err)
	}
	// Every URL of a remote given by name must be under it.
	rc, err := ParseRemoteCall(api.GitRemoteCall{GitAuth: api.GitAuth{Token: "t", CredentialsFor: "example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Auth("https://example.com/r.git\nhttps://evil.example/r.git\n"); !errdefs.Is(err, errdefs.CodeGitAuth) || !strings.Contains(err.Error(), "evil.example") {
		t.Errorf("a second URL outside credentials_for: %v, want S271 naming it", err)
	}
	if env, err := rc.Auth("https://example.com/r.git\n"); err != nil || !slices.Contains(env, "GIT_CONFIG_KEY_2=http.https://example.com/.extraHeader") {
		t.Errorf("origin under credentials_for: %q, %v", env, err)
	}
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
