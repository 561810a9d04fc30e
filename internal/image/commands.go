package image

import (
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// commandPackages names the Debian package that puts each command callers
// look for (interpreters, package managers, git) on a preset's PATH; ""
// is a command of every Debian system (Essential: yes).
var commandPackages = map[string]string{
	"python3": "python3",
	"node":    "nodejs",
	"bash":    "",
	"pip":     "python3-pip",
	"npm":     "npm",
	"git":     "git",
}

// Has reports whether command is an executable file on the image's PATH,
// looked up inside its root filesystem (a symlink is followed inside it,
// never out of it).
func (img *Image) Has(command string) bool {
	if command == "" || strings.ContainsRune(command, '/') {
		return false
	}
	root, err := tarfs.OpenRoot(img.Rootfs)
	if err != nil {
		return false
	}
	defer root.Close()
	for _, dir := range strings.Split(img.path(), ":") {
		rel, err := tarfs.CleanRel(path.Join(dir, command))
		if err != nil || !path.IsAbs(dir) {
			continue
		}
		fd, err := root.Resolve(rel, unix.O_PATH)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
			return true
		}
	}
	return false
}

// path is the PATH of the image's processes.
func (img *Image) path() string {
	for _, kv := range img.Config.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return runtime.DefaultPath
}

// With lists the catalog images, in catalog order, that have command (see
// Image.Has): a cached image is looked at; a preset not built yet has it
// when its recipe installs the command's package. A custom image not
// pulled yet is not known to have it.
func (s *Store) With(command string) []string {
	var out []string
	for _, e := range s.Catalog() {
		if img, ok := s.Lookup(e.Name); ok {
			if img.Has(command) {
				out = append(out, e.Name)
			}
			continue
		}
		p, isPreset := s.presets[e.Name]
		pkg, known := commandPackages[command]
		if isPreset && known && (pkg == "" || slices.Contains(p.recipe.Packages, pkg)) {
			out = append(out, e.Name)
		}
	}
	return out
}
