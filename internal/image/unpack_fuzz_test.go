package image

import (
	"bytes"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
)

// fuzzUnpackBudget is the unpack bound the fuzz target gives its image.
const fuzzUnpackBudget = 1 << 20

// FuzzUnpackLayers applies two hostile layers, the second over the first,
// and checks: nothing outside the root changed, no whiteout entry was
// written as a file (a directory on the way to an entry may bear the
// prefix, like AUFS's .wh..wh.plnk), and the root holds no more file content than the
// unpack budget.
func FuzzUnpackLayers(f *testing.F) {
	reg, dir, sym := ocitest.Reg, ocitest.Dir, ocitest.Symlink
	lower := ocitest.Tar(f, dir("etc", 0o755), reg("etc/passwd", "root:x:0:0", 0o644), dir("usr/lib", 0o755), reg("usr/lib/a", "a", 0o644), sym("lib", "usr/lib"))
	for _, upper := range [][]ocitest.File{
		{ocitest.Whiteout("etc", "passwd"), reg("etc/group", "root:x:0:", 0o644)},
		{ocitest.Opaque("usr/lib"), reg("usr/lib/b", "b", 0o644)},
		{ocitest.Whiteout("lib", "a"), ocitest.Whiteout("", "..")},
		{sym("etc", "../../../outside"), ocitest.Whiteout("etc", "victim"), ocitest.Opaque("etc")},
		{reg(".wh..wh.plnk/1", "", 0o644), reg("usr/.wh.lib", "", 0o644), dir("usr/lib", 0o700)},
	} {
		f.Add(lower, ocitest.Tar(f, upper...))
	}
	f.Fuzz(func(t *testing.T, lowerTar, upperTar []byte) {
		root, outside := tarfstest.Fixture(t)
		u, err := newUnpacker(root, fuzzUnpackBudget, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		if err := u.layer(bytes.NewReader(lowerTar)); err == nil {
			_ = u.layer(bytes.NewReader(upperTar))
		}
		tarfstest.AssertOutsideIntact(t, outside)
		var content int64
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), whiteoutPrefix) && !d.IsDir() {
				t.Errorf("whiteout %s was written as a file", p)
			}
			if d.Type().IsRegular() {
				fi, err := d.Info()
				if err != nil {
					return err
				}
				content += fi.Size()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if content > fuzzUnpackBudget {
			t.Fatalf("the root holds %d bytes of files, over the budget of %d", content, fuzzUnpackBudget)
		}
	})
}
