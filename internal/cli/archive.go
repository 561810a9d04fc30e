package cli

// Directories through `hutch upload` and `hutch download`: a local
// directory goes up as a tar stream (sandbox::fs::unpack), a directory of
// the sandbox comes down as a tar.gz (sandbox::fs::pack). The archive that
// comes down was made inside the sandbox, so it is extracted as untrusted
// input, with the extraction the daemon uses for images (tarfs): nothing is
// written outside LOCAL, no link is followed, device nodes are skipped,
// setuid and setgid bits are dropped, and files belong to the user running
// the CLI (the sandbox's owners mean nothing on this machine).

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/compressed"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// errUploadEnded stops the packing of a directory whose upload has ended.
var errUploadEnded = errors.New("the upload ended")

// uploadDir sends the content of local directory dir into directory
// remote of sandbox id.
func (a *app) uploadDir(ctx context.Context, id, dir, remote string) error {
	pr, pw := io.Pipe()
	type result struct {
		st  tarfs.Stats
		err error
	}
	packed := make(chan result, 1)
	go func() {
		st, err := tarfs.Pack(pw, dir, tarfs.PackOptions{})
		pw.CloseWithError(err) // nil: the end of the stream
		packed <- result{st, err}
	}()
	resp, err := a.client().UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: remote}, pr)
	pr.CloseWithError(errUploadEnded)
	p := <-packed
	if p.err != nil && !errors.Is(p.err, errUploadEnded) && !errors.Is(p.err, io.ErrClosedPipe) {
		// Reading the directory failed: the daemon saw the upload cut off.
		return fmt.Errorf("reading %s: %w (the entries sent before this were unpacked)", dir, p.err)
	}
	if err != nil {
		return err
	}
	if p.st.Skipped > 0 {
		fmt.Fprintf(a.stderr, "hutch: left out %d sockets or device nodes of %s\n", p.st.Skipped, dir)
	}
	if resp.Skipped > 0 {
		fmt.Fprintf(a.stderr, "hutch: the sandbox skipped %d entries\n", resp.Skipped)
	}
	return nil
}

// downloadDir writes the content of directory remote of sandbox id into
// local directory dir (created when missing), or the tar.gz itself to
// stdout when dir is "-".
func (a *app) downloadDir(ctx context.Context, c *client.Client, maxSize int64, id, remote, dir string) error {
	body, err := c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: remote})
	if err != nil {
		return err
	}
	defer body.Close()
	if dir == "-" {
		_, err := io.Copy(a.stdout, body)
		return err
	}
	st, err := extractLocal(body, dir, maxSize)
	if client.IsDownloadTooLarge(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("downloading %s into %s: %w; entries written before it stay: %d", remote, dir, err, st.Entries)
	}
	if st.Skipped > 0 {
		fmt.Fprintf(a.stderr, "hutch: skipped %d device nodes or special entries\n", st.Skipped)
	}
	return nil
}

// extractLocal extracts the archive r (a tar, plain or compressed) into
// directory dir, created when missing, as untrusted input (see the top of
// this file). Its files may add up to maxSize bytes (0: no bound), sizes
// as their headers say (a sparse file counts whole).
func extractLocal(r io.Reader, dir string, maxSize int64) (tarfs.Stats, error) {
	in, _, err := compressed.NewReader(r)
	if err != nil {
		return tarfs.Stats{}, err
	}
	defer in.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tarfs.Stats{}, err
	}
	root, err := tarfs.OpenRoot(dir)
	if err != nil {
		return tarfs.Stats{}, err
	}
	defer root.Close()
	var total int64
	x := tarfs.NewExtractor(root, tarfs.Options{DropSetID: true, Special: func(hdr *tar.Header, _ string) (bool, error) {
		if total += max(hdr.Size, 0); maxSize > 0 && total > maxSize {
			return false, &client.DownloadTooLargeError{Limit: maxSize, Size: -1}
		}
		return false, nil
	}})
	err = x.Extract(in, nil)
	return x.Stats(), err
}

// isDirectoryError reports whether err is the daemon's S212, the answer
// of a download of a directory.
func isDirectoryError(err error) bool {
	var env *api.ErrorEnvelope
	return errors.As(err, &env) && env.Code == string(errdefs.CodeFSWrongType)
}
