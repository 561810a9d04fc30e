package bench

// File transfer scenarios: a small file through sandbox::fs::write/read
// (JSON, base64 both ways), and a large one through the streamed
// PUT/GET /v1/sandboxes/{id}/files; and the same through Docker's archive
// API (what `docker cp` does).

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hutch-dev/hutch/api"
)

const (
	// smallFileSize is the file of the fs-1mib scenario: 1 MiB less one
	// byte, since sandbox::fs::read returns content only for files under
	// 1 MiB.
	smallFileSize = api.FsReadMaxBody - 1
	// smallFilePath and streamPath are where the files go in a sandbox or
	// container.
	smallFileDir  = "/tmp"
	smallFileName = "bench-1mib"
	streamName    = "bench-stream"
	// patternBlock is the size of the random block a stream repeats.
	patternBlock = 1 << 20
)

// crcTable checksums streams (CRC-32C, which the CPU computes at memory
// speed, so the check costs the clock little).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// randomBytes returns n reproducible pseudo-random bytes: content that
// neither side can compress.
func randomBytes(n int) []byte {
	r := rand.NewChaCha8([32]byte{'s', 'b', 'x'})
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// pattern is a stream of size bytes: block repeated.
type pattern struct {
	block []byte
	left  int64
	off   int
}

func newPattern(block []byte, size int64) *pattern { return &pattern{block: block, left: size} }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(int64(len(b)), p.left)], p.block[p.off:])
	p.off = (p.off + n) % len(p.block)
	p.left -= int64(n)
	return n, nil
}

// patternCRC is the checksum of a pattern stream of size bytes.
func patternCRC(block []byte, size int64) uint32 {
	h := crc32.New(crcTable)
	_, _ = io.Copy(h, newPattern(block, size))
	return h.Sum32()
}

// checkStream reads r to its end and checks its size and checksum.
func checkStream(r io.Reader, size int64, crc uint32) error {
	h := crc32.New(crcTable)
	n, err := io.Copy(h, r)
	if err != nil {
		return fmt.Errorf("reading the download: %w", err)
	}
	if n != size || h.Sum32() != crc {
		return fmt.Errorf("download of %d bytes (crc %08x) differs from the %d uploaded (crc %08x)", n, h.Sum32(), size, crc)
	}
	return nil
}

// fsSmall times a write then a read of the small file in one sandbox.
func fsSmall(ctx context.Context, e *env) (Result, error) {
	data := randomBytes(smallFileSize)
	b64 := base64.StdEncoding.EncodeToString(data)
	res, err := e.smallFileRoundTrips(ctx, data, func(ctx context.Context, id, path string, _ []byte) ([]byte, error) {
		if _, err := e.c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: path, ContentB64: &b64}); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		r, err := e.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: path})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if r.ContentB64 == nil {
			return nil, fmt.Errorf("reading %s: no content in the answer (size %d)", path, r.Size)
		}
		return base64.StdEncoding.DecodeString(*r.ContentB64)
	})
	res.Note = "1 MiB − 1 byte of random data, base64 in JSON both ways (sandbox::fs::read returns content only for files under 1 MiB)"
	return res, err
}

// fsSmallRaw is fsSmall through the file routes (PUT then GET
// /v1/sandboxes/{id}/files), which carry the bytes raw both ways, as
// Docker's archive API does (issue 46: 5).
func fsSmallRaw(ctx context.Context, e *env) (Result, error) {
	res, err := e.smallFileRoundTrips(ctx, randomBytes(smallFileSize), func(ctx context.Context, id, path string, data []byte) ([]byte, error) {
		if _, err := e.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: path}, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("uploading %s: %w", path, err)
		}
		_, rc, err := e.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: path})
		if err != nil {
			return nil, fmt.Errorf("downloading %s: %w", path, err)
		}
		defer rc.Close()
		return io.ReadAll(rc)
	})
	res.Note = "the same file as fs-1mib's, its bytes raw both ways (PUT, then GET, /v1/sandboxes/{id}/files); × vs docker against fs-1mib's docker cp"
	return res, err
}

// smallFileRoundTrips times roundTrip, which writes data to path in
// sandbox id and reads it back, in one sandbox, and checks the bytes.
func (e *env) smallFileRoundTrips(ctx context.Context, data []byte, roundTrip func(ctx context.Context, id, path string, data []byte) ([]byte, error)) (Result, error) {
	path := smallFileDir + "/" + smallFileName
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		var err error
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			got, err := roundTrip(ctx, id, path, data)
			d := time.Since(start)
			if err == nil && !bytes.Equal(got, data) {
				err = fmt.Errorf("reading %s: %d bytes back differ from the %d written", path, len(got), len(data))
			}
			return d, err
		})
		return err
	})
	return latencyResult(samples), err
}

// fsStream times an upload then a download of StreamBytes in one sandbox.
func fsStream(ctx context.Context, e *env) (Result, error) {
	size := e.opts.StreamBytes
	block := randomBytes(patternBlock)
	crc := patternCRC(block, size)
	path := "/tmp/" + streamName
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		var err error
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			w, err := e.c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: path}, newPattern(block, size))
			if err != nil {
				return 0, fmt.Errorf("uploading %s: %w", path, err)
			}
			if w.BytesWritten != size {
				return 0, fmt.Errorf("uploading %s: %d bytes written, want %d", path, w.BytesWritten, size)
			}
			_, body, err := e.c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: path})
			if err != nil {
				return 0, fmt.Errorf("downloading %s: %w", path, err)
			}
			err = checkStream(body, size, crc)
			body.Close()
			return time.Since(start), err
		})
		return err
	})
	res := latencyResult(samples)
	res.Note = streamNote(size)
	return res, err
}

func streamNote(size int64) string {
	return fmt.Sprintf("%s of random data up, then down, per run; checked by CRC-32C", sizeText(size))
}

// sizeText renders a byte count in MiB, or bytes when smaller.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// tarOne writes a tar archive of one regular file name of size bytes
// read from r.
func tarOne(w io.Writer, name string, size int64, r io.Reader) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, r); err != nil {
		return err
	}
	return tw.Close()
}

// untarOne reads the first file of a tar archive into w.
func untarOne(r io.Reader, w io.Writer) error {
	tr := tar.NewReader(r)
	if _, err := tr.Next(); err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	_, err := io.Copy(w, tr)
	return err
}

// dockerFsSmall is fsSmall through Docker's archive API, in and out.
var dockerFsSmall = baseline{name: baselineDocker, title: "docker: archive PUT+GET 1 MiB (docker cp in, out)", run: func(ctx context.Context, e *env) (Result, error) {
	data := randomBytes(smallFileSize)
	var archive bytes.Buffer
	if err := tarOne(&archive, smallFileName, int64(len(data)), bytes.NewReader(data)); err != nil {
		return Result{}, err
	}
	var samples []time.Duration
	err := e.withContainer(ctx, func(id string) error {
		var err error
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			if err := e.docker.c.putArchive(ctx, id, smallFileDir, bytes.NewReader(archive.Bytes())); err != nil {
				return 0, err
			}
			rc, err := e.docker.c.getArchive(ctx, id, smallFileDir+"/"+smallFileName)
			if err != nil {
				return 0, err
			}
			var got bytes.Buffer
			err = untarOne(rc, &got)
			rc.Close()
			d := time.Since(start)
			if err != nil || !bytes.Equal(got.Bytes(), data) {
				return 0, fmt.Errorf("docker archive: %d bytes back differ from the %d put (%v)", got.Len(), len(data), err)
			}
			return d, nil
		})
		return err
	})
	return latencyResult(samples), err
}}

// dockerFsStream is fsStream through Docker's archive API.
var dockerFsStream = baseline{name: baselineDocker, title: "docker: archive PUT+GET (docker cp in, out)", run: func(ctx context.Context, e *env) (Result, error) {
	size := e.opts.StreamBytes
	block := randomBytes(patternBlock)
	crc := patternCRC(block, size)
	var samples []time.Duration
	err := e.withContainer(ctx, func(id string) error {
		var err error
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(tarOne(pw, streamName, size, newPattern(block, size))) }()
			err := e.docker.c.putArchive(ctx, id, "/tmp", pr)
			pr.Close()
			if err != nil {
				return 0, err
			}
			rc, err := e.docker.c.getArchive(ctx, id, "/tmp/"+streamName)
			if err != nil {
				return 0, err
			}
			defer rc.Close()
			tr := tar.NewReader(rc)
			if _, err := tr.Next(); err != nil {
				return 0, fmt.Errorf("reading the docker archive: %w", err)
			}
			err = checkStream(tr, size, crc)
			return time.Since(start), err
		})
		return err
	})
	return latencyResult(samples), err
}}
