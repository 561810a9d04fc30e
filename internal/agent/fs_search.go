package agent

// Grep and sed: regular expressions over the lines of files, one file or a
// directory walk filtered by doublestar globs.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

const (
	// binaryProbeBytes is how much of a file is searched for a NUL byte to
	// call it binary, as grep does.
	binaryProbeBytes = 8 << 10
	// grepLineWindow is how much of a line grep matches against; the rest
	// of a longer line is not searched.
	grepLineWindow = 1 << 20
	// grepMaxResultBytes bounds the paths and content of one grep answer;
	// past it the answer is truncated.
	grepMaxResultBytes = 32 << 20
	// sedMaxLine is the longest line sed edits; a file with a longer one
	// fails (unsupported) and is left as it was.
	sedMaxLine = 8 << 20
	// ioBufBytes is the buffer size of line readers and writers.
	ioBufBytes = 64 << 10
)

// pseudoFS are the directories a walk does not enter unless it starts in
// them: their files are endless, blocking or not files at all.
var pseudoFS = map[string]bool{"/proc": true, "/sys": true, "/dev": true}

// compilePattern compiles a grep or sed pattern; regex false takes it
// literally. A pattern that does not compile is BAD_REGEX.
func compilePattern(op, path, pattern string, regex, ignoreCase bool) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fault(kindInvalid, path, "%s %s: pattern is empty", op, path)
	}
	if !regex {
		pattern = regexp.QuoteMeta(pattern)
	}
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fault(kindBadRegex, path, "%s %s: bad regular expression: %v", op, path, err)
	}
	return re, nil
}

// fileFilter selects the regular files of a walk below root.
type fileFilter struct {
	// root is the walked directory as the caller named it; real is where
	// it resolves (a symlink to a directory is walked).
	root, real       string
	recursive        bool
	include, exclude []string
}

// newFilter checks the globs of f for a walk of root.
func newFilter(op, root string, f *agentv1.FsFilter) (*fileFilter, error) {
	for _, g := range append(append([]string(nil), f.GetIncludeGlob()...), f.GetExcludeGlob()...) {
		if g == "" || !doublestar.ValidatePattern(g) {
			return nil, fault(kindInvalid, root, "%s %s: %q is not a valid glob", op, root, g)
		}
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, pathFault(op, root, err)
	}
	return &fileFilter{root: root, real: real, recursive: f.GetRecursive(),
		include: f.GetIncludeGlob(), exclude: f.GetExcludeGlob()}, nil
}

// globMatch reports whether glob g selects path, whose path relative to
// the walk's root is rel: a glob without '/' matches the base name, one
// starting with '/' the absolute path, any other rel.
func globMatch(g, path, rel string) bool {
	name := rel
	switch {
	case !strings.Contains(g, "/"):
		name = filepath.Base(path)
	case strings.HasPrefix(g, "/"):
		name = path
	}
	ok, _ := doublestar.Match(g, name)
	return ok
}

func anyMatch(globs []string, path, rel string) bool {
	for _, g := range globs {
		if globMatch(g, path, rel) {
			return true
		}
	}
	return false
}

// walk calls visit with every selected regular file, in lexical order.
// Excluded directories are not entered; without recursive only the root's
// own files are visited. Entries that cannot be read are skipped.
func (f *fileFilter) walk(ctx context.Context, visit func(path string) error) error {
	return filepath.WalkDir(f.real, func(real string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if real == f.real {
			return err
		}
		if err != nil {
			return nil
		}
		path := filepath.Join(f.root, strings.TrimPrefix(real, f.real))
		rel := strings.TrimPrefix(strings.TrimPrefix(path, f.root), "/")
		if d.IsDir() {
			if !f.recursive || pseudoFS[real] || anyMatch(f.exclude, path, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || anyMatch(f.exclude, path, rel) {
			return nil
		}
		if len(f.include) > 0 && !anyMatch(f.include, path, rel) {
			return nil
		}
		return visit(path)
	})
}

// searchRoot stats the path a grep or sed starts from: a regular file is
// searched alone, a directory walked, anything else is unsupported.
func searchRoot(op, p string) (isDir bool, err error) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, pathFault(op, p, err)
	}
	switch {
	case fi.IsDir():
		return true, nil
	case !fi.Mode().IsRegular():
		return false, fault(kindUnsupported, p, "%s %s: not a regular file or directory (%s)", op, p, fileType(fi.Mode()))
	}
	return false, nil
}

// isBinary reports whether the start of br holds a NUL byte.
func isBinary(br *bufio.Reader) bool {
	head, _ := br.Peek(binaryProbeBytes)
	return bytes.IndexByte(head, 0) >= 0
}

// readLine reads the next line of br into buf[:0], keeping at most limit
// bytes of it; long reports that the line had more. The newline is not
// kept; newline reports whether there was one. err is io.EOF at the end,
// where an empty line without newline means there was no line.
func readLine(br *bufio.Reader, buf []byte, limit int) (line []byte, newline, long bool, err error) {
	line = buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk, newline = chunk[:n-1], true
		}
		if room := limit - len(line); len(chunk) > room {
			chunk, long = chunk[:max(room, 0)], true
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, newline, long, err
	}
}

// errGrepFull stops a grep walk once the answer is full.
var errGrepFull = errors.New("grep answer full")

// grep is one search in progress.
type grep struct {
	re         *regexp.Regexp
	maxMatches int
	maxLine    int
	// budget is what is left of grepMaxResultBytes.
	budget int
	resp   *agentv1.FsGrepResponse
	line   []byte
}

// Grep searches a file, or the files below a directory, for lines that
// match a regular expression. Binary files (a NUL in the first 8 KiB) and
// unreadable files are skipped; a walk does not enter /proc, /sys and /dev.
func (s *fsServer) Grep(ctx context.Context, req *agentv1.FsGrepRequest) (*agentv1.FsGrepResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "grep", req.GetPath(), err)
	}
	re, err := compilePattern("grep", p, req.GetPattern(), true, req.GetIgnoreCase())
	if err != nil {
		return nil, asStatus(ctx, "grep", p, err)
	}
	if req.GetMaxMatches() <= 0 || req.GetMaxLineBytes() <= 0 {
		return nil, fault(kindInvalid, p, "grep %s: max_matches and max_line_bytes must be positive", p).status()
	}
	g := &grep{
		re:         re,
		maxMatches: int(min(req.GetMaxMatches(), 1<<30)),
		maxLine:    int(min(req.GetMaxLineBytes(), grepLineWindow)),
		budget:     grepMaxResultBytes,
		resp:       &agentv1.FsGrepResponse{Matches: []*agentv1.FsGrepMatch{}},
	}
	isDir, err := searchRoot("grep", p)
	if err == nil {
		if isDir {
			var filter *fileFilter
			if filter, err = newFilter("grep", p, req.GetFilter()); err == nil {
				err = filter.walk(ctx, g.file)
			}
		} else {
			err = g.file(p)
		}
	}
	if err != nil && !errors.Is(err, errGrepFull) {
		return nil, asStatus(ctx, "grep", p, err)
	}
	return g.resp, nil
}

// file searches one file; it returns errGrepFull when the answer is full.
func (g *grep) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, ioBufBytes)
	if isBinary(br) {
		return nil
	}
	for n := int64(1); ; n++ {
		line, newline, _, err := readLine(br, g.line, grepLineWindow)
		g.line = line
		if len(line) == 0 && !newline && err != nil {
			return nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if g.re.Match(line) {
			if len(g.resp.Matches) >= g.maxMatches || g.budget < len(path)+g.maxLine {
				g.resp.Truncated = true
				return errGrepFull
			}
			content := bytes.Clone(line[:min(len(line), g.maxLine)])
			g.budget -= len(path) + len(content)
			g.resp.Matches = append(g.resp.Matches, &agentv1.FsGrepMatch{Path: safeString(path), Line: n, Content: content})
		}
		if err != nil {
			return nil
		}
	}
}

// editor is one sed in progress.
type editor struct {
	re        *regexp.Regexp
	repl      []byte
	literal   bool
	firstOnly bool
	// line and out are reused buffers.
	line, out []byte
}

// Sed replaces the matches of a pattern in files: the listed files, or the
// file or the files below the directory path. Each file is replaced
// atomically (temp file, fsync, rename) and only when something matched;
// one file's failure is reported in its result and the others go on. A
// file without any write permission bit is read-only and is not changed.
// A walk skips binary files and reports only files that changed or failed.
func (s *fsServer) Sed(ctx context.Context, req *agentv1.FsSedRequest) (*agentv1.FsSedResponse, error) {
	files, root := req.GetFiles(), req.GetPath()
	switch {
	case len(files) > 0 && root != "":
		return nil, fault(kindInvalid, root, "sed %s: give either files or path, not both", root).status()
	case len(files) == 0 && root == "":
		return nil, fault(kindInvalid, "", "sed: give files or path").status()
	}
	where := root
	if where == "" {
		where = files[0]
	}
	re, err := compilePattern("sed", where, req.GetPattern(), req.GetRegex(), req.GetIgnoreCase())
	if err != nil {
		return nil, asStatus(ctx, "sed", where, err)
	}
	e := &editor{re: re, repl: []byte(req.GetReplacement()), literal: !req.GetRegex(), firstOnly: req.GetFirstOnly()}
	resp := &agentv1.FsSedResponse{Results: []*agentv1.FsSedResult{}}
	for _, f := range files {
		if ctx.Err() != nil {
			return nil, asStatus(ctx, "sed", f, ctx.Err())
		}
		p, err := cleanPath("files", f)
		if err != nil {
			resp.Results = append(resp.Results, sedFailure(f, err))
			continue
		}
		resp.Results = append(resp.Results, e.file(p, false))
	}
	if root == "" {
		return resp, nil
	}
	p, err := cleanPath("path", root)
	if err != nil {
		return nil, asStatus(ctx, "sed", root, err)
	}
	isDir, err := searchRoot("sed", p)
	if err != nil {
		return nil, asStatus(ctx, "sed", p, err)
	}
	if !isDir {
		resp.Results = append(resp.Results, e.file(p, false))
		return resp, nil
	}
	filter, err := newFilter("sed", p, req.GetFilter())
	if err != nil {
		return nil, asStatus(ctx, "sed", p, err)
	}
	err = filter.walk(ctx, func(path string) error {
		if r := e.file(path, true); r != nil && (r.Replacements > 0 || r.Error != nil) {
			resp.Results = append(resp.Results, r)
		}
		return nil
	})
	if err != nil {
		return nil, asStatus(ctx, "sed", p, err)
	}
	return resp, nil
}

// sedFailure is the result of a file that failed.
func sedFailure(path string, err error) *agentv1.FsSedResult {
	return &agentv1.FsSedResult{Path: safeString(path), Error: pathFault("sed", path, err).detail()}
}

// file edits one file (through a symlink to it). With skipBinary a binary
// file is skipped: the result is nil.
func (e *editor) file(path string, skipBinary bool) *agentv1.FsSedResult {
	target, fi, err := writeTarget(path)
	switch {
	case err != nil:
		return sedFailure(path, err)
	case fi == nil:
		return sedFailure(path, fault(kindNotFound, path, "sed %s: no such file", path))
	case fi.IsDir():
		return sedFailure(path, fault(kindWrongType, path, "sed %s: is a directory", path))
	case !fi.Mode().IsRegular():
		return sedFailure(path, fault(kindUnsupported, path, "sed %s: not a regular file (%s)", path, fileType(fi.Mode())))
	}
	f, err := os.Open(target)
	if err != nil {
		return sedFailure(path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, ioBufBytes)
	if skipBinary && isBinary(br) {
		return nil
	}
	matched, err := e.rewrite(path, br, nil)
	if err != nil || matched == 0 {
		return sedResult(path, 0, err)
	}
	if modeBits(fi)&0o222 == 0 {
		return sedFailure(path, fault(kindPermission, path, "sed %s: file is read-only (mode %04o); chmod it first", path, modeBits(fi)))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return sedFailure(path, err)
	}
	br.Reset(f)
	a, err := createAtomic(target, nil, fi)
	if err != nil {
		return sedFailure(path, err)
	}
	bw := bufio.NewWriterSize(a, ioBufBytes)
	n, err := e.rewrite(path, br, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		a.abort()
		return sedResult(path, 0, err)
	}
	if err := a.commit(); err != nil {
		return sedFailure(path, err)
	}
	return sedResult(path, n, nil)
}

func sedResult(path string, n int64, err error) *agentv1.FsSedResult {
	if err != nil {
		return sedFailure(path, err)
	}
	return &agentv1.FsSedResult{Path: safeString(path), Replacements: n}
}

// rewrite copies br, the content of path, to w with the replacements made
// and returns their number. With w nil it only looks: it stops at the
// first match.
func (e *editor) rewrite(path string, br *bufio.Reader, w io.Writer) (int64, error) {
	var total int64
	for n := 1; ; n++ {
		line, newline, long, err := readLine(br, e.line, sedMaxLine)
		e.line = line
		if err != nil && err != io.EOF {
			return 0, err
		}
		if long {
			return 0, fault(kindUnsupported, path, "sed %s: line %d is longer than %d bytes", path, n, sedMaxLine)
		}
		if len(line) == 0 && !newline {
			return total, nil
		}
		body, cr := line, false
		if newline && bytes.HasSuffix(body, []byte("\r")) {
			body, cr = body[:len(body)-1], true
		}
		if w == nil {
			if e.re.Match(body) {
				return 1, nil
			}
		} else {
			out, k := e.replace(body)
			total += int64(k)
			if cr {
				out = append(out, '\r')
			}
			if newline {
				out = append(out, '\n')
			}
			if _, err := w.Write(out); err != nil {
				return 0, err
			}
		}
		if err == io.EOF {
			return total, nil
		}
	}
}

// replace returns line with its matches replaced (the first only with
// firstOnly) and their number, in a buffer reused by the next call.
func (e *editor) replace(line []byte) ([]byte, int) {
	n := -1
	if e.firstOnly {
		n = 1
	}
	out := e.out[:0]
	last := 0
	matches := e.re.FindAllSubmatchIndex(line, n)
	for _, m := range matches {
		out = append(out, line[last:m[0]]...)
		if e.literal {
			out = append(out, e.repl...)
		} else {
			out = e.re.Expand(out, e.repl, line, m)
		}
		last = m[1]
	}
	out = append(out, line[last:]...)
	e.out = out
	return out, len(matches)
}
