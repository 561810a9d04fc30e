package snapsvc

// ADD of a git repository (issue 39): its ref is resolved to a commit on
// the server before the step's cache lookup (the commit enters the key:
// a branch that moved rebuilds, the same commit hits the cache), then
// on a miss the commit alone is fetched and its files (.git with
// --keep-git-dir) put at the destination, every connection under the
// build's egress policy as an ADD of a URL.

import (
	"errors"
	"io"
	"os"
	"strconv"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/templatebuild"
)

// addGit is an ADD whose one source is the git repository ref.
func (b *build) addGit(ss *stageState, step templatebuild.Step, ev api.TemplateBuildEvent, c *instructions.AddCommand, ref *templatebuild.GitRef) error {
	keep := c.KeepGitDir != nil && *c.KeepGitDir
	if ref.KeepGitDir != nil {
		if c.KeepGitDir != nil && *c.KeepGitDir != *ref.KeepGitDir {
			return stepFailed(step, errors.New("--keep-git-dir and the URL's keep-git-dir differ"))
		}
		keep = *ref.KeepGitDir
	}
	dir, err := b.s.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, err := b.fetcher(dir)
	if err != nil {
		return stepFailed(step, err)
	}
	repo, err := f.ResolveGit(b.ctx, ref, c.Checksum)
	if err != nil {
		return stepFailed(step, err)
	}
	defer repo.Close()
	dest := b.dest(ss, c.DestPath)
	inputs := []string{"ADD git", c.Chown, c.Chmod, dest, repo.Commit, ref.SubDir, strconv.FormatBool(keep)}
	return b.fsStep(ss, step, ev, inputs, func(box string) error {
		checkout, commitTime, err := repo.Checkout(keep)
		if err != nil {
			return stepFailed(step, err)
		}
		src, err := templatebuild.GitSubdir(checkout, ref.SubDir)
		if err != nil {
			return stepFailed(step, err)
		}
		pr, pw := io.Pipe()
		var paths []string
		go func() {
			pw.CloseWithError(templatebuild.PackDir(pw, src, dest, c.Chmod, commitTime, &paths))
		}()
		if err := b.put(box, pr, nil, ""); err != nil {
			pr.CloseWithError(err)
			return err
		}
		return b.chown(box, paths, c.Chown)
	})
}
