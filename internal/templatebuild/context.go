package templatebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// DefaultMaxContextBytes bounds an uploaded build context's content.
const DefaultMaxContextBytes = 256 << 20

// maxContextEntries bounds its entries.
const maxContextEntries = 100_000

// Entry is a file, directory or symlink of the build context.
type Entry struct {
	// Name is the entry's path in the context, clean and relative.
	Name     string
	Typeflag byte
	Mode     int64
	Linkname string
	Data     []byte
}

// Context is an uploaded build context, its .dockerignore applied.
type Context struct {
	entries map[string]*Entry
	names   []string // sorted
}

// LoadContext reads a build context, a tar stream (gzip or plain), up to
// maxBytes of content: paths are cleaned and kept inside the context (a
// ".." is S001), devices and other special files are skipped, and what
// .dockerignore excludes is dropped. A nil r is an empty context.
func LoadContext(r io.Reader, maxBytes int64) (*Context, error) {
	c := &Context{entries: map[string]*Entry{}}
	if r == nil {
		return c, nil
	}
	tr, err := tarReader(r)
	if err != nil {
		return nil, errdefs.Malformed("build context: %v", err)
	}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errdefs.Malformed("build context: not a tar stream: %v", err)
		}
		name, ok := cleanRel(h.Name)
		if !ok {
			return nil, errdefs.Malformed("build context: entry %q leaves the context", clip(h.Name))
		}
		if name == "." {
			continue
		}
		if len(c.entries) >= maxContextEntries {
			return nil, errdefs.Malformed("build context: more than %d entries", maxContextEntries)
		}
		e := &Entry{Name: name, Typeflag: h.Typeflag, Mode: h.Mode & 0o7777, Linkname: h.Linkname}
		switch h.Typeflag {
		case tar.TypeReg:
			if total+h.Size > maxBytes {
				return nil, errdefs.New(errdefs.CodeCapacity, "build context: more than %d MiB", maxBytes>>20)
			}
			if e.Data, err = io.ReadAll(io.LimitReader(tr, h.Size)); err != nil {
				return nil, errdefs.Malformed("build context: reading %s: %v", name, err)
			}
			total += int64(len(e.Data))
		case tar.TypeDir, tar.TypeSymlink:
		default:
			continue
		}
		c.entries[name] = e
	}
	if err := c.applyIgnore(); err != nil {
		return nil, err
	}
	// A tar need not list its directories: those its entries imply are
	// the context's too (a COPY of one, or a glob, finds them).
	for n := range c.entries {
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			if _, ok := c.entries[d]; ok {
				break
			}
			c.entries[d] = &Entry{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}
		}
	}
	for n := range c.entries {
		c.names = append(c.names, n)
	}
	sort.Strings(c.names)
	return c, nil
}

// tarReader reads a tar stream, gunzipping it when it starts with gzip's
// magic.
func tarReader(r io.Reader) (*tar.Reader, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return tar.NewReader(zr), nil
	}
	return tar.NewReader(br), nil
}

// applyIgnore drops what the context's .dockerignore excludes (but never
// the Dockerfile or .dockerignore themselves, as docker does not).
func (c *Context) applyIgnore() error {
	ign, ok := c.entries[".dockerignore"]
	if !ok {
		return nil
	}
	patterns, err := ignorefile.ReadAll(bytes.NewReader(ign.Data))
	if err != nil {
		return errdefs.Malformed(".dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return errdefs.Malformed(".dockerignore: %v", err)
	}
	for name := range c.entries {
		if name == ".dockerignore" || name == "Dockerfile" {
			continue
		}
		if drop, err := pm.MatchesOrParentMatches(name); err != nil {
			return errdefs.Malformed(".dockerignore: %v", err)
		} else if drop {
			delete(c.entries, name)
		}
	}
	return nil
}

// File is the content of the context's regular file name, if it has one.
func (c *Context) File(name string) ([]byte, bool) {
	e, ok := c.entries[name]
	if !ok || e.Typeflag != tar.TypeReg {
		return nil, false
	}
	return e.Data, true
}

// cleanRel is p cleaned and relative to the context, false when it leaves it.
func cleanRel(p string) (string, bool) {
	p = path.Clean("/" + p)
	if strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return "", false
	}
	if p == "/" {
		return ".", true
	}
	return p[1:], true
}

// Copy is what a COPY or ADD of the context writes: a tar to unpack at
// the sandbox's root, the paths it makes (for --chown), and the digest of
// all it reads (the step's cache input).
type Copy struct {
	Tar    []byte
	Paths  []string
	Digest string
}

// CopyOptions are a COPY's or ADD's flags.
type CopyOptions struct {
	// Chmod is an octal mode for every file and directory copied ("" keeps
	// the context's).
	Chmod string
	// Unpack makes a local tar source unpack at the destination (ADD).
	Unpack bool
}

// Plan resolves a COPY's sources (paths or globs) against the context
// and its destination (absolute, already joined with the workdir): one
// source file to a destination not ending in "/" is copied to that name,
// a directory's content and every other file into the destination
// directory. A source that matches nothing is S001.
func (c *Context) Plan(sources []string, dest string, o CopyOptions) (*Copy, error) {
	mode, err := chmodOf(o.Chmod)
	if err != nil {
		return nil, err
	}
	type item struct {
		e   *Entry
		dst string
	}
	var items []item
	destIsDir := strings.HasSuffix(dest, "/") || len(sources) > 1
	for _, src := range sources {
		pattern, ok := cleanRel(src)
		if !ok {
			return nil, errdefs.Malformed("COPY source %q leaves the build context", clip(src))
		}
		var matched []string
		if pattern == "." {
			matched = []string{"."}
		} else {
			for _, n := range c.names {
				if ok, _ := path.Match(pattern, n); ok {
					matched = append(matched, n)
				}
			}
		}
		if len(matched) == 0 && HasGlob(src) {
			return nil, errdefs.Malformed("COPY source %q matches nothing in the build context (or .dockerignore excludes it)", clip(src))
		}
		if len(matched) == 0 {
			return nil, errdefs.Malformed("COPY source %q: no such file in the build context (or .dockerignore excludes it)", clip(src))
		}
		if len(matched) > 1 {
			destIsDir = true
		}
		for _, m := range matched {
			e := c.entries[m]
			if m == "." || e.Typeflag == tar.TypeDir {
				destIsDir = true
				prefix := m + "/"
				for _, n := range c.names {
					if m == "." || strings.HasPrefix(n, prefix) {
						rel := n
						if m != "." {
							rel = strings.TrimPrefix(n, prefix)
						}
						items = append(items, item{c.entries[n], rel})
					}
				}
				continue
			}
			items = append(items, item{e, path.Base(m)})
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	out := &Copy{}
	seen := map[string]bool{}
	put := func(name string, hdr *tar.Header, data []byte) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		hdr.Name = strings.TrimPrefix(name, "/")
		if mode >= 0 && hdr.Typeflag != tar.TypeSymlink {
			hdr.Mode = mode
		}
		fmt.Fprintf(h, "%s\x00%c\x00%o\x00%s\x00%d\x00", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname, len(data))
		h.Write(data)
		out.Paths = append(out.Paths, name)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, it := range items {
		target := path.Join(dest, it.dst)
		if !destIsDir {
			target = path.Clean(dest)
		}
		e := it.e
		if o.Unpack && e.Typeflag == tar.TypeReg {
			if ok, err := unpackInto(bytes.NewReader(e.Data), path.Join(dest, "."), DefaultMaxContextBytes, put); err != nil {
				return nil, errdefs.Malformed("ADD %s: %v", e.Name, err)
			} else if ok {
				continue
			}
		}
		hdr := &tar.Header{Typeflag: e.Typeflag, Mode: e.Mode, Linkname: e.Linkname, Size: int64(len(e.Data)), Format: tar.FormatPAX}
		if err := put(target, hdr, e.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	out.Tar, out.Digest = buf.Bytes(), hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// unpackInto writes the entries of r, when it is a tar (gzip or plain),
// under dir through put, at most maxBytes of content (a gzip bomb stops
// there); false when r is not a tar.
func unpackInto(r io.Reader, dir string, maxBytes int64, put func(string, *tar.Header, []byte) error) (bool, error) {
	tr, err := tarReader(r)
	if err != nil {
		return false, nil
	}
	first := true
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return !first, nil
		}
		if err != nil {
			if first {
				return false, nil
			}
			return true, err
		}
		first = false
		name, ok := cleanRel(h.Name)
		if !ok {
			return true, errors.New("an entry leaves the destination")
		}
		if name == "." || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeSymlink) {
			continue
		}
		if maxBytes -= h.Size; maxBytes < 0 {
			return true, fmt.Errorf("the archive unpacks to more than %d MiB", DefaultMaxContextBytes>>20)
		}
		body, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return true, err
		}
		hdr := &tar.Header{Typeflag: h.Typeflag, Mode: h.Mode & 0o7777, Linkname: h.Linkname, Size: int64(len(body)), Format: tar.FormatPAX}
		if err := put(path.Join(dir, name), hdr, body); err != nil {
			return true, err
		}
	}
}

// chmodOf is a --chmod value as a mode, -1 for none ("").
func chmodOf(chmod string) (int64, error) {
	if chmod == "" {
		return -1, nil
	}
	m, err := strconv.ParseUint(chmod, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, errdefs.Malformed("--chmod=%s: give an octal mode such as 755", clip(chmod))
	}
	return int64(m), nil
}
