package cli

// `hutch fs OP ID ...` (the ten sandbox::fs operations), `hutch upload` and
// `hutch download` (streamed transfers).

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// fsCmd is `hutch fs`, the parent of one command per operation.
func (a *app) fsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fs OP ID ...",
		Short: "Work with files inside a sandbox (ls, stat, mkdir, write, read, rm, mv, chmod, grep, sed, watch)",
		Long: `Work with files inside a sandbox. Paths are absolute and resolve inside the
sandbox (a symlink to /etc/passwd reads the sandbox's own file). Each command
is one sandbox::fs function; --json prints the function's result as it is.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the function's JSON result")
	cmd.PersistentFlags().StringVar(&a.fsUser, "user", "", "as this user of the sandbox's image (name or uid[:gid]) instead of the image's own")
	// out prints res as JSON with --json, else through human (nil: print nothing).
	out := func(res any, human func() error) error {
		if asJSON {
			return printJSON(a.stdout, res)
		}
		if human == nil {
			return nil
		}
		return human()
	}
	cmd.AddCommand(
		a.fsLsCmd(out), a.fsStatCmd(out), a.fsMkdirCmd(out), a.fsWriteCmd(out), a.fsReadCmd(out),
		a.fsRmCmd(out), a.fsMvCmd(out), a.fsChmodCmd(out), a.fsGrepCmd(out), a.fsSedCmd(out),
		a.fsWatchCmd(out),
	)
	return cmd
}

// outputFunc prints a command's result (see fsCmd).
type outputFunc func(res any, human func() error) error

func (a *app) fsLsCmd(out outputFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "ls ID PATH",
		Short: "List a directory",
		Args:  cobra.ExactArgs(2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			res, err := a.client().FsLs(cmd.Context(), api.FsLsRequest{SandboxID: args[0], User: a.fsUser, Path: args[1]})
			if err != nil {
				return err
			}
			return out(res, func() error {
				tw := tabwriter.NewWriter(a.stdout, 0, 8, 2, ' ', 0)
				fmt.Fprintln(tw, "MODE\tSIZE\tMODIFIED\tNAME")
				for _, e := range res.Entries {
					name := e.Name
					switch {
					case e.IsDir:
						name += "/"
					case e.IsSymlink:
						name += "@"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.Mode, e.Size, time.Unix(e.Mtime, 0).Format("2006-01-02 15:04"), name)
				}
				return tw.Flush()
			})
		}),
	}
}

func (a *app) fsStatCmd(out outputFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "stat ID PATH",
		Short: "Describe a path (a symlink itself, not its target) as JSON",
		Args:  cobra.ExactArgs(2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			res, err := a.client().FsStat(cmd.Context(), api.FsStatRequest{SandboxID: args[0], User: a.fsUser, Path: args[1]})
			if err != nil {
				return err
			}
			return out(res, func() error { return printJSON(a.stdout, res) })
		}),
	}
}

func (a *app) fsMkdirCmd(out outputFunc) *cobra.Command {
	var parents bool
	var mode string
	cmd := &cobra.Command{
		Use:   "mkdir ID PATH",
		Short: "Create a directory",
		Args:  cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVarP(&parents, "parents", "p", false, "create missing parents; an existing directory is not an error")
	cmd.Flags().StringVar(&mode, "mode", "", "octal mode (default 0755)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		res, err := a.client().FsMkdir(cmd.Context(), api.FsMkdirRequest{SandboxID: args[0], User: a.fsUser, Path: args[1], Mode: api.FileMode(mode), Parents: parents})
		if err != nil {
			return err
		}
		return out(res, nil)
	})
	return cmd
}

func (a *app) fsWriteCmd(out outputFunc) *cobra.Command {
	var parents bool
	var mode string
	var content string
	cmd := &cobra.Command{
		Use:   "write ID PATH [--content TEXT]",
		Short: "Write a file from --content or stdin (for large files use hutch upload)",
		Args:  cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVarP(&parents, "parents", "p", false, "create missing parent directories")
	cmd.Flags().StringVar(&mode, "mode", "", "octal mode (default: 0644, or the existing file's)")
	cmd.Flags().StringVar(&content, "content", "", "the file's text (default: read stdin)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		req := api.FsWriteRequest{SandboxID: args[0], User: a.fsUser, Path: args[1], Mode: api.FileMode(mode), Parents: parents}
		if cmd.Flags().Changed("content") {
			req.Content = &content
		} else {
			data, err := io.ReadAll(a.stdin)
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			b64 := base64.StdEncoding.EncodeToString(data)
			req.ContentB64 = &b64
		}
		res, err := a.client().FsWrite(cmd.Context(), req)
		if err != nil {
			return err
		}
		return out(res, nil)
	})
	return cmd
}

func (a *app) fsReadCmd(out outputFunc) *cobra.Command {
	maxSize := client.DefaultMaxDownload
	cmd := &cobra.Command{
		Use:   "read ID PATH",
		Short: "Print a file's content (files of 1 MiB or more are streamed, up to --max-size)",
		Args:  cobra.ExactArgs(2),
	}
	maxSizeFlag(cmd, &maxSize)
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		return overMaxSize(args[1], maxSize, func() error {
			c := a.client().WithMaxDownload(maxSize)
			res, err := c.FsRead(cmd.Context(), api.FsReadRequest{SandboxID: args[0], User: a.fsUser, Path: args[1]})
			if err != nil {
				return err
			}
			return out(res, func() error {
				switch {
				case res.Body != nil:
					_, err := io.WriteString(a.stdout, *res.Body)
					return err
				case res.ContentB64 != nil:
					data, err := base64.StdEncoding.DecodeString(*res.ContentB64)
					if err != nil {
						return fmt.Errorf("decoding content_b64: %w", err)
					}
					_, err = a.stdout.Write(data)
					return err
				}
				_, r, err := c.Download(cmd.Context(), api.FsDownloadRequest{SandboxID: args[0], User: a.fsUser, Path: args[1]})
				if err != nil {
					return err
				}
				defer r.Close()
				_, err = io.Copy(a.stdout, r)
				return err
			})
		})
	})
	return cmd
}

// maxSizeFlag registers --max-size, the bound of what a download writes.
func maxSizeFlag(cmd *cobra.Command, maxSize *int64) {
	cmd.Flags().Var(byteFlag{maxSize}, "max-size", "the most bytes to write: 512m, 1g (0: no bound)")
}

// overMaxSize runs download, a download of remote bounded by maxSize,
// and says which flag lets a larger one through when it was too large.
func overMaxSize(remote string, maxSize int64, download func() error) error {
	err := download()
	if client.IsDownloadTooLarge(err) {
		return fmt.Errorf("%s is larger than --max-size %s; a larger --max-size (or 0) lets it through", remote, sizeString(maxSize))
	}
	return err
}

func (a *app) fsRmCmd(out outputFunc) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "rm ID PATH",
		Short: "Remove a file, symlink or empty directory",
		Args:  cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove a directory and everything in it")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		res, err := a.client().FsRm(cmd.Context(), api.FsRmRequest{SandboxID: args[0], User: a.fsUser, Path: args[1], Recursive: recursive})
		if err != nil {
			return err
		}
		return out(res, nil)
	})
	return cmd
}

func (a *app) fsMvCmd(out outputFunc) *cobra.Command {
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "mv ID SRC DST",
		Short: "Move or rename a path",
		Args:  cobra.ExactArgs(3),
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace an existing DST")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		res, err := a.client().FsMv(cmd.Context(), api.FsMvRequest{SandboxID: args[0], User: a.fsUser, Src: args[1], Dst: args[2], Overwrite: overwrite})
		if err != nil {
			return err
		}
		return out(res, nil)
	})
	return cmd
}

func (a *app) fsChmodCmd(out outputFunc) *cobra.Command {
	var uid, gid uint32
	var recursive bool
	cmd := &cobra.Command{
		Use:   "chmod ID PATH [MODE]",
		Short: "Change the mode (octal) and/or, with --uid/--gid, the owner of a path",
		Args:  cobra.RangeArgs(2, 3),
	}
	cmd.Flags().Uint32Var(&uid, "uid", 0, "new owner uid")
	cmd.Flags().Uint32Var(&gid, "gid", 0, "new owner gid")
	cmd.Flags().BoolVarP(&recursive, "recursive", "R", false, "apply to everything below PATH too")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		req := api.FsChmodRequest{SandboxID: args[0], User: a.fsUser, Path: args[1], Recursive: recursive}
		if len(args) == 3 {
			req.Mode = api.FileMode(args[2])
		}
		if cmd.Flags().Changed("uid") {
			req.UID = &uid
		}
		if cmd.Flags().Changed("gid") {
			req.GID = &gid
		}
		if req.Mode == "" && req.UID == nil && req.GID == nil {
			return usagef("give a MODE, --uid or --gid: %s", cmd.UseLine())
		}
		res, err := a.client().FsChmod(cmd.Context(), req)
		if err != nil {
			return err
		}
		return out(res, nil)
	})
	return cmd
}

// searchFlags are the file selection flags of grep and sed.
type searchFlags struct {
	noRecursive      bool
	ignoreCase       bool
	include, exclude []string
}

func (f *searchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.noRecursive, "no-recursive", false, "only the files directly in a directory PATH")
	fl.BoolVarP(&f.ignoreCase, "ignore-case", "i", false, "match without regard to case")
	fl.StringArrayVar(&f.include, "include", nil, "only files matching this glob (repeatable; without '/' it matches the base name)")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "skip files and directories matching this glob (repeatable)")
}

func (f *searchFlags) recursive() *bool {
	r := !f.noRecursive
	return &r
}

func (a *app) fsGrepCmd(out outputFunc) *cobra.Command {
	var f searchFlags
	var maxMatches, maxLine int64
	cmd := &cobra.Command{
		Use:   "grep ID PATTERN PATH",
		Short: "Search files for a Go regular expression; prints PATH:LINE:TEXT",
		Args:  cobra.ExactArgs(3),
	}
	f.register(cmd)
	cmd.Flags().Int64Var(&maxMatches, "max-matches", 0, "stop after this many matches (default 10000)")
	cmd.Flags().Int64Var(&maxLine, "max-line-bytes", 0, "cut matched lines to this many bytes (default 4096)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		res, err := a.client().FsGrep(cmd.Context(), api.FsGrepRequest{
			SandboxID: args[0], User: a.fsUser, Pattern: args[1], Path: args[2],
			Recursive: f.recursive(), IgnoreCase: f.ignoreCase, IncludeGlob: f.include, ExcludeGlob: f.exclude,
			MaxMatches: maxMatches, MaxLineBytes: maxLine,
		})
		if err != nil {
			return err
		}
		return out(res, func() error {
			for _, m := range res.Matches {
				fmt.Fprintf(a.stdout, "%s:%d:%s\n", m.Path, m.Line, m.Content)
			}
			if res.Truncated {
				fmt.Fprintf(a.stderr, "hutch: stopped after %d matches (raise --max-matches)\n", len(res.Matches))
			}
			return nil
		})
	})
	return cmd
}

func (a *app) fsSedCmd(out outputFunc) *cobra.Command {
	var f searchFlags
	var literal, firstOnly bool
	cmd := &cobra.Command{
		Use:   "sed ID PATTERN REPLACEMENT PATH...",
		Short: "Replace matches of a Go regular expression in files ($1, ${name} in REPLACEMENT)",
		Long: `Replace matches of PATTERN in the files PATH... (several paths are a list of
files; one path may be a file or a directory, searched like grep). Each file is
replaced atomically; a file that fails is reported and the others go on; the
command exits 1 when one failed.`,
		Args: cobra.MinimumNArgs(4),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&literal, "literal", false, "take PATTERN and REPLACEMENT literally")
	cmd.Flags().BoolVar(&firstOnly, "first-only", false, "replace the first match of each line only")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		regex := !literal
		req := api.FsSedRequest{
			SandboxID: args[0], User: a.fsUser, Pattern: args[1], Replacement: args[2],
			Recursive: f.recursive(), IgnoreCase: f.ignoreCase, IncludeGlob: f.include, ExcludeGlob: f.exclude,
			Regex: &regex, FirstOnly: firstOnly,
		}
		if paths := args[3:]; len(paths) == 1 {
			req.Path = paths[0]
		} else {
			req.Files = paths
		}
		res, err := a.client().FsSed(cmd.Context(), req)
		if err != nil {
			return err
		}
		failed := 0
		for _, r := range res.Results {
			if !r.Success {
				failed++
			}
		}
		err = out(res, func() error {
			for _, r := range res.Results {
				if r.Success {
					fmt.Fprintf(a.stdout, "%s: %d\n", r.Path, r.Replacements)
				} else {
					fmt.Fprintf(a.stderr, "hutch: %s: %s: %s\n", r.Path, r.Code, r.Error)
				}
			}
			return nil
		})
		if err == nil && failed > 0 {
			return &exitError{code: exitFailure}
		}
		return err
	})
	return cmd
}

func (a *app) uploadCmd() *cobra.Command {
	var parents bool
	var mode string
	cmd := &cobra.Command{
		Use:   "upload ID LOCAL REMOTE",
		Short: "Copy a local file (- for stdin) or directory into a sandbox, streamed",
		Long: `Copy LOCAL (- for stdin) to the absolute path REMOTE inside the sandbox. The
bytes are streamed: any size works, and REMOTE appears only once the whole
file has arrived (an interrupted upload leaves nothing there).

When LOCAL is a directory, its content goes into the directory REMOTE
(created when missing; what is there already stays unless an entry replaces
it), as a tar stream: subdirectories, modes, mtimes, symlinks as symlinks.
Entries are written as they arrive: an interrupted upload leaves those that
came before.`,
		Args: cobra.ExactArgs(3),
	}
	cmd.Flags().BoolVarP(&parents, "parents", "p", false, "create missing parent directories")
	cmd.Flags().StringVar(&mode, "mode", "", "octal mode (default: 0644, or the existing file's)")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		var src io.Reader = a.stdin
		if args[1] != "-" {
			f, err := os.Open(args[1])
			if err != nil {
				return err
			}
			defer f.Close()
			if fi, err := f.Stat(); err == nil && fi.IsDir() {
				if cmd.Flags().Changed("mode") {
					return usagef("--mode applies to a file, not to the directory %s", args[1])
				}
				return a.uploadDir(cmd.Context(), args[0], args[1], args[2])
			}
			src = f
		}
		_, err := a.client().Upload(cmd.Context(), api.FsUploadRequest{SandboxID: args[0], Path: args[2], Mode: api.FileMode(mode), Parents: parents}, src)
		return err
	})
	return cmd
}

func (a *app) downloadCmd() *cobra.Command {
	maxSize := client.DefaultMaxDownload
	cmd := &cobra.Command{
		Use:   "download ID REMOTE LOCAL",
		Short: "Copy a file or directory out of a sandbox to LOCAL (- for stdout), streamed",
		Long: `Copy the file REMOTE of the sandbox to LOCAL (- for stdout; a directory gets
the file under REMOTE's name). The bytes are streamed; LOCAL appears only once
the whole file has arrived.

When REMOTE is a directory, its content goes into the directory LOCAL (created
when missing), or its tar.gz to stdout with -. What comes from a sandbox is
untrusted: nothing is written outside LOCAL, links are recreated but never
followed, device nodes are skipped, setuid and setgid bits are dropped, and
the files are yours (the sandbox's owners are not kept). An interrupted
download leaves the entries that came before.

--max-size bounds what lands on this machine (1g by default; 0 for no bound):
a file larger than it, or a directory whose files add up to more, fails
the download (LOCAL is not written; a directory keeps the entries before
the one that passed it).`,
		Args: cobra.ExactArgs(3),
	}
	maxSizeFlag(cmd, &maxSize)
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		return overMaxSize(args[1], maxSize, func() error {
			return a.download(cmd.Context(), a.client().WithMaxDownload(maxSize), maxSize, args[0], args[1], args[2])
		})
	})
	return cmd
}

// download copies remote of sandbox id to local (see downloadCmd), writing
// at most maxSize bytes (0: no bound).
func (a *app) download(ctx context.Context, c *client.Client, maxSize int64, id, remote, local string) error {
	entry, r, err := c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: remote})
	if isDirectoryError(err) {
		if derr := a.downloadDir(ctx, c, maxSize, id, remote, local); !isDirectoryError(derr) {
			return derr
		}
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if local == "-" {
		_, err := io.Copy(a.stdout, r)
		return err
	}
	dst := local
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, path.Base(remote))
	}
	return writeLocal(dst, r, localMode(entry.Mode))
}

// localMode is the mode of a downloaded file: 0644, 0755 when the remote
// file is executable by anyone.
func localMode(remote string) os.FileMode {
	if m, err := strconv.ParseUint(remote, 8, 32); err == nil && m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// writeLocal writes r to dst through a temporary file in dst's directory,
// renamed over dst only when r has been read to its end.
func writeLocal(dst string, r io.Reader, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".hutch-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, r); err != nil {
		return fmt.Errorf("downloading to %s: %w", dst, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
