package gitcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// FuzzParsers feeds every parser of git's output the bytes a hostile
// repository (or a replaced git binary in the sandbox) could print, and
// checks: an error is always the S500 of garbled output, no parser returns
// more records than the output has lines or NUL-separated fields, and a
// cut status says it is truncated.
func FuzzParsers(f *testing.F) {
	f.Add(z("# branch.oid "+oidA, "# branch.head main", "# branch.ab +2 -1",
		"1 .M N... 100644 100644 100644 6178079 6178079 b c.txt",
		"2 R. N... 100644 100644 100644 7898192 7898192 R100 renamed.txt", "a.txt",
		"u UU N... 100644 100644 100644 100644 6178079 9b1719f 0505b3b conflict me.txt", "? d/"), false)
	f.Add(z(oidA+"\x1fAda\x1fada@example.com\x1f1700000000\x1fsubject"), true)
	f.Add([]byte("* main\n  feature\n  remotes/origin/main\n"), false)
	f.Add(z("M", "a.txt", "R100", "old", "new"), false)
	f.Add([]byte("user.name=Ada\ncore.bare=false\n"), false)
	f.Add([]byte("origin\thttps://example.com/r.git (fetch)\norigin\thttps://example.com/r.git (push)\n"), false)
	f.Add([]byte("To https://example.com/r.git\n=\trefs/heads/main:refs/heads/main\t[up to date]\nDone\n"), false)
	f.Fuzz(func(t *testing.T, out []byte, cut bool) {
		records := bytes.Count(out, []byte{0}) + bytes.Count(out, []byte{'\n'}) + 1
		check := func(what string, n int, err error) {
			t.Helper()
			if err != nil && errdefs.CodeOf(err) != errdefs.CodeInternal {
				t.Errorf("%s: error %v is not S500", what, err)
			}
			if n > records {
				t.Errorf("%s: %d records from output with %d", what, n, records)
			}
		}
		st, err := ParseStatus(out, cut)
		check("status", len(st.Files), err)
		if err == nil && cut && !st.Truncated {
			t.Error("a cut status does not say it is truncated")
		}
		commits, err := ParseLog(out, cut)
		check("log", len(commits), err)
		branches, _, err := ParseBranches(out)
		check("branches", len(branches), err)
		diff, err := ParseNameStatus(out, cut)
		check("name-status", len(diff), err)
		check("config", len(ParseConfig(out)), nil)
		check("values", len(ParseValues("user.name", out)), nil)
		check("remotes", len(ParseRemotes(out)), nil)
		push := ParsePush(out)
		check("push", len(push), nil)
		for _, c := range commits {
			if strings.ContainsRune(c.Subject, 0) {
				t.Errorf("a commit subject holds a NUL: %q", c.Subject)
			}
		}
	})
}
