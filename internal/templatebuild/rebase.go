package templatebuild

import (
	"archive/tar"
	"io"
	"path"
	"strings"
)

// Rebase copies the tar stream r of a sandbox's pack of a directory (a
// COPY --from source) to w with its entries moved under target; with only
// set, just the entry of that name (and what is under it) goes, to target
// itself. chmod ("" for none) sets every entry's mode; the paths written
// are appended to paths.
func Rebase(r io.Reader, w io.Writer, target, only, chmod string, paths *[]string) error {
	mode, err := chmodOf(chmod)
	if err != nil {
		return err
	}
	tr, err := tarReader(r)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		rel, ok := cleanRel(h.Name)
		if !ok || rel == "." {
			continue
		}
		if only != "" {
			if rel != only && !strings.HasPrefix(rel, only+"/") {
				continue
			}
			rel = strings.TrimPrefix(strings.TrimPrefix(rel, only), "/")
		}
		name := path.Join(target, rel)
		if name == "/" || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeSymlink) {
			continue
		}
		out := &tar.Header{Name: strings.TrimPrefix(name, "/"), Typeflag: h.Typeflag, Mode: h.Mode & 0o7777, Linkname: h.Linkname, Size: h.Size, ModTime: h.ModTime, Format: tar.FormatPAX}
		if mode >= 0 && h.Typeflag != tar.TypeSymlink {
			out.Mode = mode
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
		*paths = append(*paths, name)
	}
}
