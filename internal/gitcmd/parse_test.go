package gitcmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// z joins records with the NUL git -z ends each with.
func z(recs ...string) []byte { return []byte(strings.Join(recs, "\x00") + "\x00") }

const (
	oidA = "59ca354fa68d489acbb487873d0dfdfafd45a112"
	oidB = "7ca049faa4cd6dcd7d9b656b995291c9be876318"
)

func TestParseStatus(t *testing.T) {
	out := z(
		"# branch.oid "+oidA,
		"# branch.head main",
		"# branch.upstream origin/main",
		"# branch.ab +2 -1",
		"# stash 3", // a header this parser does not know: skipped
		"1 .M N... 100644 100644 100644 6178079 6178079 b c.txt",
		"1 A. N... 000000 100644 100644 0000000 6178079 new file",
		"1 MD N... 100644 100644 000000 6178079 6178079 both",
		"2 R. N... 100644 100644 100644 7898192 7898192 R100 renamed.txt", "a.txt",
		"u UU N... 100644 100644 100644 100644 6178079 9b1719f 0505b3b conflict me.txt",
		"? d/",
		"? untracked file.txt",
		"! ignored.o",
	)
	st, err := ParseStatus(out, false)
	if err != nil {
		t.Fatal(err)
	}
	want := api.GitStatus{
		Branch: "main", Commit: oidA, Upstream: "origin/main", Ahead: 2, Behind: 1,
		Files: []api.GitFileStatus{
			{Path: "b c.txt", Index: "unmodified", Worktree: "modified", Status: "modified"},
			{Path: "new file", Index: "added", Worktree: "unmodified", Status: "added", Staged: true},
			{Path: "both", Index: "modified", Worktree: "deleted", Status: "modified", Staged: true},
			{Path: "renamed.txt", RenamedFrom: "a.txt", Index: "renamed", Worktree: "unmodified", Status: "renamed", Staged: true},
			{Path: "conflict me.txt", Index: "unmerged", Worktree: "unmerged", Status: "conflicted", Conflicted: true},
			{Path: "d/", Index: "untracked", Worktree: "untracked", Status: "untracked", Untracked: true},
			{Path: "untracked file.txt", Index: "untracked", Worktree: "untracked", Status: "untracked", Untracked: true},
		},
	}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("ParseStatus =\n%+v\nwant\n%+v", st, want)
	}
}

func TestParseStatusHeadsAndCuts(t *testing.T) {
	st, err := ParseStatus(z("# branch.oid (initial)", "# branch.head (detached)"), false)
	if err != nil || st.Commit != "" || st.Branch != "" || !st.Detached || !st.Clean || st.Files == nil {
		t.Errorf("initial, detached: %+v, %v", st, err)
	}
	// Cut in the middle of a rename's old path: the rename is dropped.
	cut := []byte("# branch.head main\x00? a\x002 R. N... 100644 100644 100644 7898192 7898192 R100 new\x00ol")
	st, err = ParseStatus(cut, true)
	if err != nil || len(st.Files) != 1 || st.Files[0].Path != "a" || !st.Truncated || st.Clean {
		t.Errorf("cut status: %+v, %v", st, err)
	}
	for _, bad := range [][]byte{z("1 M"), z("x what"), z("# branch.ab 2 1"), z("2 R. N... 100644 100644 100644 7898192 7898192 R100 new")} {
		if _, err := ParseStatus(bad, false); !errdefs.Is(err, errdefs.CodeInternal) {
			t.Errorf("ParseStatus(%q) = %v, want S500", bad, err)
		}
	}
}

func TestParseLog(t *testing.T) {
	out := z(
		oidB, oidA, "Ann Author", "ann@example.com", "2026-11-26T01:34:21+00:00", "second: with\ttab and \x1f unit separator",
		oidA, "", "Bob", "bob@example.com", "2026-11-25T10:00:00-05:00", "first",
	)
	commits, err := ParseLog(out, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.GitCommit{
		{Hash: oidB, Parents: []string{oidA}, Author: "Ann Author", Email: "ann@example.com", Date: "2026-11-26T01:34:21+00:00", Subject: "second: with\ttab and \x1f unit separator"},
		{Hash: oidA, Parents: []string{}, Author: "Bob", Email: "bob@example.com", Date: "2026-11-25T10:00:00-05:00", Subject: "first"},
	}
	if !reflect.DeepEqual(commits, want) {
		t.Errorf("ParseLog =\n%+v\nwant\n%+v", commits, want)
	}
	if c, err := ParseLog(out[:len(out)-30], true); err != nil || len(c) != 1 || c[0].Hash != oidB {
		t.Errorf("a cut log: %+v, %v; want the first commit", c, err)
	}
	if c, err := ParseLog(nil, false); err != nil || len(c) != 0 || c == nil {
		t.Errorf("empty log: %v, %v", c, err)
	}
	// A record out of step (a field too many) is an error, not a commit
	// made of the wrong fields.
	for _, bad := range [][]byte{
		z(oidB, oidA, "Ann", "ann@example.com", "2026-11-26T01:34:21+00:00", "s", "extra"),
		z("not a hash", "", "Ann", "a@b", "2026-11-26T01:34:21+00:00", "s"),
		z(oidB, "", "Ann", "a@b", "yesterday", "s"),
		z(oidB, "parent?", "Ann", "a@b", "2026-11-26T01:34:21+00:00", "s"),
	} {
		if _, err := ParseLog(bad, false); !errdefs.Is(err, errdefs.CodeInternal) {
			t.Errorf("ParseLog(%q) = %v, want S500", bad, err)
		}
	}
}

func TestParseBranches(t *testing.T) {
	line := func(f ...string) string { return strings.Join(f, "\x00") + "\n" }
	out := []byte(line("*", "refs/heads/main", "origin/main", oidA, "ahead 1, behind 2") +
		line(" ", "refs/heads/feature/x", "", oidB, "") +
		line(" ", "refs/heads/old", "origin/old", oidB, "gone") +
		line(" ", "refs/remotes/origin/HEAD", "", oidA, "") +
		line(" ", "refs/remotes/origin/main", "", oidA, ""))
	branches, current, err := ParseBranches(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.GitBranch{
		{Name: "main", Current: true, Upstream: "origin/main", Commit: oidA, Ahead: 1, Behind: 2},
		{Name: "feature/x", Commit: oidB},
		{Name: "old", Upstream: "origin/old", Commit: oidB, Gone: true},
		{Name: "origin/main", Remote: true, Commit: oidA},
	}
	if current != "main" || !reflect.DeepEqual(branches, want) {
		t.Errorf("ParseBranches = %q\n%+v\nwant main\n%+v", current, branches, want)
	}
	if b, cur, err := ParseBranches(nil); err != nil || len(b) != 0 || b == nil || cur != "" {
		t.Errorf("no branches: %v %q %v", b, cur, err)
	}
	for _, bad := range []string{line("*", "refs/heads/main"), line(" ", "refs/tags/v1", "", oidA, ""), line(" ", "refs/heads/a", "", oidA, "ahead x")} {
		if _, _, err := ParseBranches([]byte(bad)); !errdefs.Is(err, errdefs.CodeInternal) {
			t.Errorf("ParseBranches(%q) = %v, want S500", bad, err)
		}
	}
}

func TestParseNameStatus(t *testing.T) {
	files, err := ParseNameStatus(z("M", "b c.txt", "R087", "old name", "new name", "A", "-rf", "D", "gone"), false)
	want := []api.GitDiffFile{{Status: "M", Path: "b c.txt"}, {Status: "R", Path: "new name", RenamedFrom: "old name"}, {Status: "A", Path: "-rf"}, {Status: "D", Path: "gone"}}
	if err != nil || !reflect.DeepEqual(files, want) {
		t.Errorf("ParseNameStatus = %+v, %v; want %+v", files, err, want)
	}
	files, err = ParseNameStatus([]byte("M\x00a\x00R100\x00old\x00ne"), true)
	if err != nil || len(files) != 1 {
		t.Errorf("cut name-status = %+v, %v; want the first file only", files, err)
	}
	if _, err := ParseNameStatus(z("M"), false); !errdefs.Is(err, errdefs.CodeInternal) {
		t.Errorf("a status without its path = %v, want S500", err)
	}
}

func TestParseConfigAndRemotes(t *testing.T) {
	out := z("user.name\nAnn", "core.bare\nfalse", "section.flag", "remote.origin.url\nhttps://u:secret@example.com/r.git",
		"remote.my.fork.url\n/srv/fork", "remote.origin.pushurl\nssh://git@example.com/r.git", "alias.multi\nline one\nline two")
	entries := ParseConfig(out)
	if len(entries) != 7 || entries[2] != (api.GitConfigEntry{Key: "section.flag"}) || entries[6].Value != "line one\nline two" {
		t.Errorf("ParseConfig = %+v", entries)
	}
	remotes := ParseRemotes(out)
	want := []api.GitRemote{
		{Name: "origin", URL: "https://u:***@example.com/r.git", PushURL: "ssh://git@example.com/r.git"},
		{Name: "my.fork", URL: "/srv/fork"},
	}
	if !reflect.DeepEqual(remotes, want) {
		t.Errorf("ParseRemotes = %+v, want %+v", remotes, want)
	}
	if v := ParseValues("a.b", z("1", "-x")); len(v) != 2 || v[1] != (api.GitConfigEntry{Key: "a.b", Value: "-x"}) {
		t.Errorf("ParseValues = %+v", v)
	}
}

func TestParsePush(t *testing.T) {
	out := []byte("To http://10.0.0.1:8080/r.git\n" +
		"*\trefs/heads/feature:refs/heads/feature\t[new branch]\n" +
		" \trefs/heads/main:refs/heads/main\t0123abc..4567def\n" +
		"!\trefs/heads/old:refs/heads/old\t[rejected] (fetch first)\n" +
		"=\trefs/heads/same:refs/heads/same\t[up to date]\n" +
		"Done\n")
	want := []api.GitPushRef{
		{Local: "feature", Remote: "feature", Status: "new", Summary: "[new branch]"},
		{Local: "main", Remote: "main", Status: "updated", Summary: "0123abc..4567def"},
		{Local: "old", Remote: "old", Status: "rejected", Summary: "[rejected] (fetch first)"},
		{Local: "same", Remote: "same", Status: "up_to_date", Summary: "[up to date]"},
	}
	if got := ParsePush(out); !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePush = %+v, want %+v", got, want)
	}
}
