package snapsvc

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutch-dev/hutch/internal/layertree"
)

// Shared layer trees (issue 39). A template's layer (a built template's
// last layer, a from_sandbox template's captured one) is unpacked once
// into a tree beside it (layertree.Unpack): build/trees/<sha> for a build
// layer, layer-<uuid>.tree for a captured one. Its sandboxes, and the
// build's start command that its snapshot is taken of, boot on the tree
// (Origin.Layer is the directory): the runtime mounts it read-only under
// each sandbox's own writable layer, so another sandbox of the template
// copies none of its files. A tree goes with its template, once no
// sandbox's root is mounted on it and no checkpoint names it (gcTrees).

// treesDir holds the trees of build layers.
const treesDir = "trees"

// treeOf is where the tree of the layer at rel (under the checkpoint
// directory) is kept.
func treeOf(rel string) string {
	if dir, file := filepath.Split(rel); filepath.Clean(dir) == filepath.Join(buildDir, "layers") {
		return filepath.Join(buildDir, treesDir, strings.TrimSuffix(file, ".tar"))
	}
	return strings.TrimSuffix(rel, ".tar") + ".tree"
}

// ensureTree unpacks the layer at rel into its tree, unless it is there,
// and returns the tree's path.
func (s *Service) ensureTree(rel string) (string, error) {
	tree := s.path(treeOf(rel))
	if err := os.MkdirAll(filepath.Dir(tree), 0o700); err != nil {
		return "", err
	}
	if err := layertree.Unpack(s.path(rel), tree); err != nil {
		return "", err
	}
	return tree, nil
}

// treesInUse are the trees some mount's overlay has as a lower layer (a
// running sandbox's root) or some checkpoint under the checkpoint
// directory booted on (layertree.CheckpointNote), by path.
func (s *Service) treesInUse() map[string]bool {
	used := map[string]bool{}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			for _, opt := range strings.Split(sc.Text()[strings.LastIndexByte(sc.Text(), ' ')+1:], ",") {
				if dirs, ok := strings.CutPrefix(opt, "lowerdir="); ok {
					for _, d := range strings.Split(dirs, ":") {
						used[d] = true
					}
				}
			}
		}
		f.Close()
	}
	notes, _ := filepath.Glob(filepath.Join(s.dir, "*", layertree.CheckpointNote))
	for _, n := range notes {
		if b, err := os.ReadFile(n); err == nil {
			used[string(b)] = true
		}
	}
	return used
}

// dropTree removes the tree of the layer at rel unless it is in use.
func (s *Service) dropTree(rel string, used map[string]bool) {
	tree := s.path(treeOf(rel))
	if used[tree] {
		return
	}
	if err := os.RemoveAll(tree); err != nil {
		s.log.Error("removing a template's layer tree", "tree", tree, "err", err)
	}
}

// gcTrees removes the trees of build layers that no template boots on
// and nothing uses; s.buildMu is held.
func (s *Service) gcTrees(kept map[string]bool) {
	entries, _ := os.ReadDir(s.path(filepath.Join(buildDir, treesDir)))
	if len(entries) == 0 {
		return
	}
	used := s.treesInUse()
	for _, e := range entries {
		sha := e.Name()
		if strings.HasPrefix(sha, ".") || (isSHA(sha) && kept[sha]) {
			continue
		}
		s.dropTree(filepath.Join(buildDir, "layers", sha+".tar"), used)
	}
}
