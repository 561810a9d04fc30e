package gitcmd

// Parsers of git's machine-readable output. Records are split on NUL
// (-z) or newline where what they hold cannot contain one (ref names);
// fields within a record are split on NUL or on the spaces of a fixed
// number of leading fields, the path last. Output git's own documentation
// does not promise (a new header, status letter or field) is skipped or
// kept as given; output that breaks the format is an S500.

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// garbled is the error of output that is not in the format asked for.
func garbled(what, record string) error {
	return errdefs.New(errdefs.CodeInternal, "git's %s output is not in the expected format near %s", what, quote(record))
}

// fields splits b on NUL, without the empty field after a final NUL.
// With cut (the output was truncated), the last, partial field is dropped.
func fields(b []byte, cut bool) []string {
	if len(b) == 0 {
		return nil
	}
	parts := strings.Split(string(b), "\x00")
	if cut || parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// stateOf maps porcelain letters to file states.
var stateOf = map[byte]string{
	'.': api.GitUnmodified, 'M': api.GitModified, 'T': api.GitTypeChanged, 'A': api.GitAdded,
	'D': api.GitDeleted, 'R': api.GitRenamed, 'C': api.GitCopied, 'U': api.GitUnmerged,
}

func state(c byte) string {
	if s, ok := stateOf[c]; ok {
		return s
	}
	return string(c)
}

// ParseStatus reads git status --porcelain=v2 --branch -z. With cut
// (stdout passed the output cap), the partial last record is dropped and
// the status says it is truncated.
func ParseStatus(out []byte, cut bool) (api.GitStatus, error) {
	st := api.GitStatus{Files: []api.GitFileStatus{}, Truncated: cut}
	recs := fields(out, cut)
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if rec == "" {
			continue
		}
		var f api.GitFileStatus
		switch rec[0] {
		case '#':
			if err := statusHeader(&st, rec); err != nil {
				return st, err
			}
			continue
		case '1', '2', 'u':
			n := map[byte]int{'1': 9, '2': 10, 'u': 11}[rec[0]]
			parts := strings.SplitN(rec, " ", n)
			if len(parts) != n || len(parts[1]) != 2 {
				return st, garbled("status", rec)
			}
			x, y := parts[1][0], parts[1][1]
			f = api.GitFileStatus{Path: parts[n-1], Index: state(x), Worktree: state(y), Staged: x != '.'}
			switch rec[0] {
			case '2':
				if i+1 >= len(recs) {
					if cut {
						continue
					}
					return st, garbled("status", rec)
				}
				i++
				f.RenamedFrom = recs[i]
			case 'u':
				f.Conflicted, f.Staged = true, false
			}
		case '?':
			f = api.GitFileStatus{Path: strings.TrimPrefix(rec, "? "), Index: api.GitUntracked, Worktree: api.GitUntracked, Untracked: true}
		case '!':
			continue
		default:
			return st, garbled("status", rec)
		}
		f.Status = summary(f)
		st.Files = append(st.Files, f)
	}
	st.Clean = len(st.Files) == 0 && !cut
	return st, nil
}

// summary is a file's one state: conflicted, untracked, or the staged
// change, else the unstaged one.
func summary(f api.GitFileStatus) string {
	switch {
	case f.Conflicted:
		return api.GitConflicted
	case f.Untracked:
		return api.GitUntracked
	case f.Index != api.GitUnmodified:
		return f.Index
	}
	return f.Worktree
}

// statusHeader reads one "# branch.…" header into st.
func statusHeader(st *api.GitStatus, rec string) error {
	key, val, _ := strings.Cut(strings.TrimPrefix(rec, "# "), " ")
	switch key {
	case "branch.oid":
		if val != "(initial)" {
			st.Commit = val
		}
	case "branch.head":
		if val == "(detached)" {
			st.Detached = true
		} else {
			st.Branch = val
		}
	case "branch.upstream":
		st.Upstream = val
	case "branch.ab":
		var err error
		a, b, ok := strings.Cut(val, " ")
		if !ok || !strings.HasPrefix(a, "+") || !strings.HasPrefix(b, "-") {
			return garbled("status", rec)
		}
		if st.Ahead, err = strconv.Atoi(a[1:]); err != nil {
			return garbled("status", rec)
		}
		if st.Behind, err = strconv.Atoi(b[1:]); err != nil {
			return garbled("status", rec)
		}
	}
	return nil
}

// hash is a full commit hash (SHA-1 or SHA-256).
var hash = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// ParseLog reads git log -z in logFormat: six NUL-separated fields per
// commit, each commit ended by a NUL. No field can hold a NUL (git
// refuses one in a commit message and its headers), and each record is
// checked (a full hash, an RFC 3339 date) so that a misread is an error,
// never a wrong commit. With cut (stdout passed the output cap), the
// partial last commit is dropped.
func ParseLog(out []byte, cut bool) ([]api.GitCommit, error) {
	fs := fields(out, cut)
	if cut {
		fs = fs[:len(fs)-len(fs)%logFields]
	}
	if len(fs)%logFields != 0 {
		return nil, garbled("log", string(out))
	}
	commits := make([]api.GitCommit, 0, len(fs)/logFields)
	for i := 0; i < len(fs); i += logFields {
		r := fs[i : i+logFields]
		c := api.GitCommit{Hash: r[0], Parents: strings.Fields(r[1]), Author: r[2], Email: r[3], Date: r[4], Subject: r[5]}
		if c.Parents == nil {
			c.Parents = []string{}
		}
		if !hash.MatchString(c.Hash) {
			return nil, garbled("log", r[0])
		}
		for _, p := range c.Parents {
			if !hash.MatchString(p) {
				return nil, garbled("log", r[1])
			}
		}
		if _, err := time.Parse(time.RFC3339, c.Date); err != nil {
			return nil, garbled("log", r[4])
		}
		commits = append(commits, c)
	}
	return commits, nil
}

// ParseBranches reads git for-each-ref in branchFormat: one ref a line
// (ref names hold no newline), five NUL-separated fields. It returns the
// branches and the current one.
func ParseBranches(out []byte) ([]api.GitBranch, string, error) {
	branches := []api.GitBranch{}
	current := ""
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\x00")
		if len(f) != 5 {
			return nil, "", garbled("branch", line)
		}
		b := api.GitBranch{Current: f[0] == "*", Upstream: f[2], Commit: f[3]}
		switch {
		case strings.HasPrefix(f[1], "refs/heads/"):
			b.Name = strings.TrimPrefix(f[1], "refs/heads/")
		case strings.HasPrefix(f[1], "refs/remotes/"):
			b.Name, b.Remote = strings.TrimPrefix(f[1], "refs/remotes/"), true
			if strings.HasSuffix(b.Name, "/HEAD") {
				continue // the remote's default branch, a symbolic ref
			}
		default:
			return nil, "", garbled("branch", line)
		}
		if err := track(&b, f[4]); err != nil {
			return nil, "", garbled("branch", line)
		}
		if b.Current {
			current = b.Name
		}
		branches = append(branches, b)
	}
	return branches, current, nil
}

// track reads %(upstream:track,nobracket): "ahead 1, behind 2", "gone" or
// nothing.
func track(b *api.GitBranch, s string) error {
	if s == "gone" {
		b.Gone = true
		return nil
	}
	for _, part := range strings.Split(s, ", ") {
		if part == "" {
			continue
		}
		word, n, ok := strings.Cut(part, " ")
		v, err := strconv.Atoi(n)
		switch {
		case !ok || err != nil:
			return garbled("branch", s)
		case word == "ahead":
			b.Ahead = v
		case word == "behind":
			b.Behind = v
		}
	}
	return nil
}

// ParseNameStatus reads git diff --name-status -z: a status, then a path
// (two for a rename or copy: the old, then the new). With cut, the
// partial last entry is dropped.
func ParseNameStatus(out []byte, cut bool) ([]api.GitDiffFile, error) {
	fs := fields(out, cut)
	files := []api.GitDiffFile{}
	for i := 0; i < len(fs); i++ {
		st := fs[i]
		n := 1
		if st != "" && (st[0] == 'R' || st[0] == 'C') {
			n = 2
		}
		switch {
		case i+n < len(fs):
		case cut:
			return files, nil
		default:
			return nil, garbled("diff", st)
		}
		if st == "" {
			return nil, garbled("diff", st)
		}
		f := api.GitDiffFile{Status: st[:1]}
		i++
		if n == 2 {
			f.RenamedFrom = fs[i]
			i++
		}
		f.Path = fs[i]
		files = append(files, f)
	}
	return files, nil
}

// ParseConfig reads git config -z --list or --get-regexp: "key\nvalue"
// entries ended by NUL (a key without a value has no newline).
func ParseConfig(out []byte) []api.GitConfigEntry {
	entries := []api.GitConfigEntry{}
	for _, e := range fields(out, false) {
		k, v, _ := strings.Cut(e, "\n")
		entries = append(entries, api.GitConfigEntry{Key: k, Value: v})
	}
	return entries
}

// ParseValues reads git config -z --get-all: values ended by NUL.
func ParseValues(key string, out []byte) []api.GitConfigEntry {
	entries := []api.GitConfigEntry{}
	for _, v := range fields(out, false) {
		entries = append(entries, api.GitConfigEntry{Key: key, Value: v})
	}
	return entries
}

// ParseRemotes reads the remote.NAME.url and remote.NAME.pushurl entries
// of the config (Remotes), in their order; passwords in URLs are
// redacted.
func ParseRemotes(out []byte) []api.GitRemote {
	remotes := []api.GitRemote{}
	at := map[string]int{}
	for _, e := range ParseConfig(out) {
		rest, ok := strings.CutPrefix(e.Key, "remote.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		name, kind := rest[:i], rest[i+1:]
		j, seen := at[name]
		if !seen {
			j = len(remotes)
			at[name] = j
			remotes = append(remotes, api.GitRemote{Name: name})
		}
		switch kind {
		case "url":
			if remotes[j].URL == "" {
				remotes[j].URL = Redact(e.Value)
			}
		case "pushurl":
			if remotes[j].PushURL == "" {
				remotes[j].PushURL = Redact(e.Value)
			}
		}
	}
	return remotes
}

// pushStatus maps git push --porcelain's flags to statuses.
var pushStatus = map[byte]string{
	' ': "updated", '+': "forced", '-': "deleted", '*': "new", '!': "rejected", '=': "up_to_date",
}

// ParsePush reads git push --porcelain: a "To URL" line, then a line per
// ref, "FLAG\tFROM:TO\tSUMMARY", then "Done". A push of HEAD (the current
// branch, to its own name) has the remote's name as its local one.
func ParsePush(out []byte) []api.GitPushRef {
	refs := []api.GitPushRef{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := strings.SplitN(string(line), "\t", 3)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		st, ok := pushStatus[f[0][0]]
		if !ok {
			continue
		}
		from, to, _ := strings.Cut(f[1], ":")
		if from == "HEAD" {
			from = to // a push of HEAD goes to the current branch's name
		}
		refs = append(refs, api.GitPushRef{
			Local: shortRef(from), Remote: shortRef(to), Status: st, Summary: safetext.Line(f[2], 256),
		})
	}
	return refs
}

// shortRef is a branch's name without refs/heads/.
func shortRef(ref string) string {
	return strings.TrimPrefix(ref, "refs/heads/")
}
