package client

import (
	"errors"
	"fmt"
	"io"
)

// DefaultMaxDownload is the most bytes Download and DownloadArchive
// deliver unless WithMaxDownload sets another bound: 1 GiB. What comes
// from a sandbox is untrusted, its size included.
const DefaultMaxDownload int64 = 1 << 30

// DownloadTooLargeError is the error of a download past the client's
// bound (WithMaxDownload): at once when the daemon announced the size, or
// from the reader once it passed the bound. Nothing past the bound is
// delivered.
type DownloadTooLargeError struct {
	// Limit is the bound in bytes.
	Limit int64
	// Size is the size the daemon announced; -1 when the stream passed
	// the bound.
	Size int64
}

func (e *DownloadTooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("the download is %d bytes, over the limit of %d bytes (WithMaxDownload raises it)", e.Size, e.Limit)
	}
	return fmt.Sprintf("the download is over the limit of %d bytes (WithMaxDownload raises it)", e.Limit)
}

// IsDownloadTooLarge reports whether err is a download past its bound.
func IsDownloadTooLarge(err error) bool {
	var e *DownloadTooLargeError
	return errors.As(err, &e)
}

// WithMaxDownload returns a client that shares c's connections and
// token and whose Download and DownloadArchive deliver at most n bytes
// (n <= 0: no bound).
func (c *Client) WithMaxDownload(n int64) *Client {
	cp := *c
	cp.maxDownload = n
	return &cp
}

// limitDownload bounds body to the client's maximum; size is the length
// the daemon announced (-1 when unknown). A body announced too large is
// closed at once.
func (c *Client) limitDownload(body io.ReadCloser, size int64) (io.ReadCloser, error) {
	if c.maxDownload <= 0 {
		return body, nil
	}
	if size > c.maxDownload {
		body.Close()
		return nil, &DownloadTooLargeError{Limit: c.maxDownload, Size: size}
	}
	return &limitedBody{ReadCloser: body, left: c.maxDownload, limit: c.maxDownload}, nil
}

// limitedBody delivers at most limit bytes of a body, then fails unless
// the body ends there.
type limitedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		var one [1]byte
		for {
			n, err := b.ReadCloser.Read(one[:])
			if n > 0 {
				return 0, &DownloadTooLargeError{Limit: b.limit, Size: -1}
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
