// Package compressed reads streams that may be compressed: it tells gzip
// and zstd apart from anything else by their magic bytes and decodes them
// with bounded memory; and it gzips a stream as it is read. The daemon
// uses it for the archives it takes and sends, the CLI for the archives
// it receives.
package compressed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Format is the compression of a stream.
type Format string

// The formats Detect tells apart. Only None, Gzip and Zstd are decoded.
const (
	None  Format = "none"
	Gzip  Format = "gzip"
	Zstd  Format = "zstd"
	Bzip2 Format = "bzip2"
	Xz    Format = "xz"
)

// MaxZstdWindow bounds the window of a zstd stream (what a decoder keeps
// in memory): 8 MiB covers every compression level up to 19 without
// --long; a stream asking for more is refused as corrupt.
const MaxZstdWindow = 8 << 20

// magics are the first bytes of each compressed format.
var magics = []struct {
	f     Format
	magic []byte
}{
	{Gzip, []byte{0x1f, 0x8b}},
	{Zstd, []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{Bzip2, []byte("BZh")},
	{Xz, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
}

// headBytes is how much of a stream Detect may need.
const headBytes = 6

// Detect names the compression of a stream that starts with head; None
// for anything it does not know (a tar stream, say).
func Detect(head []byte) Format {
	for _, m := range magics {
		if bytes.HasPrefix(head, m.magic) {
			return m.f
		}
	}
	return None
}

// CorruptError is a decoder's failure: the stream is not valid in its
// format (a truncated or corrupt gzip stream, a zstd window over
// MaxZstdWindow), as opposed to a failure to read the stream itself.
type CorruptError struct {
	Format Format
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the %s stream is not valid: %v", e.Format, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// NewReader peeks at the start of r and returns a reader of its content:
// decoded when r is gzip or zstd, r's own bytes otherwise. Errors of
// reading r come out as they are; errors of the decoder as a
// *CorruptError. bzip2 and xz are refused (a *CorruptError naming what
// is supported). Close the reader to release the decoder.
func NewReader(r io.Reader) (io.ReadCloser, Format, error) {
	src := &source{r: r}
	br := bufio.NewReader(src)
	head, err := br.Peek(headBytes)
	if err != nil && err != io.EOF {
		return nil, None, err
	}
	f := Detect(head)
	switch f {
	case None:
		return io.NopCloser(br), f, nil
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, f, decodeError(src, f, err)
		}
		return &decoder{r: zr, src: src, f: f, close: zr.Close}, f, nil
	case Zstd:
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(MaxZstdWindow))
		if err != nil {
			return nil, f, &CorruptError{Format: f, Err: err}
		}
		return &decoder{r: zr, src: src, f: f, close: func() error { zr.Close(); return nil }}, f, nil
	}
	return nil, f, &CorruptError{Format: f, Err: errors.New(string(f) + " is not supported: send a tar stream, plain, gzip or zstd")}
}

// source keeps the first error of reading the compressed stream, so that
// a decoder's failure can be told from its input's.
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// decodeError is err of a decoder of format f over src: src's own error
// when reading it failed, else a *CorruptError.
func decodeError(src *source, f Format, err error) error {
	if src.err != nil {
		return src.err
	}
	return &CorruptError{Format: f, Err: err}
}

// decoder is the reader NewReader returns for a compressed stream.
type decoder struct {
	r     io.Reader
	src   *source
	f     Format
	close func() error
}

func (d *decoder) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = decodeError(d.src, d.f, err)
	}
	return n, err
}

func (d *decoder) Close() error { return d.close() }

// gzipChunk is how much of its source a Gzipped reader reads at once.
const gzipChunk = 256 << 10

// Gzipped returns a reader of r's bytes gzipped (at BestSpeed), compressed
// as they are read: it holds at most one chunk of r and what the
// compressor emits for it. Closing it closes r when r is an io.Closer.
func Gzipped(r io.Reader) io.ReadCloser {
	g := &gzipReader{src: r, buf: make([]byte, gzipChunk)}
	g.zw, _ = gzip.NewWriterLevel(&g.out, gzip.BestSpeed) // a valid level
	return g
}

type gzipReader struct {
	src io.Reader
	zw  *gzip.Writer
	out bytes.Buffer
	buf []byte
	err error // the end: io.EOF once the trailer is out, or src's error
}

func (g *gzipReader) Read(p []byte) (int, error) {
	for g.out.Len() == 0 {
		if g.err != nil {
			return 0, g.err
		}
		n, err := g.src.Read(g.buf)
		if n > 0 {
			_, _ = g.zw.Write(g.buf[:n]) // into a bytes.Buffer: cannot fail
		}
		switch {
		case err == io.EOF:
			_ = g.zw.Close()
			g.err = io.EOF
		case err != nil:
			g.err = err
		}
	}
	return g.out.Read(p)
}

func (g *gzipReader) Close() error {
	if c, ok := g.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
