package templatebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Bounds of an ADD of a URL.
const (
	// MaxFetchBytes bounds one fetched file.
	MaxFetchBytes = 256 << 20
	// FetchTimeout bounds one fetch, its redirects and body included.
	FetchTimeout = 10 * time.Minute
	maxRedirects = 10
	// unnamed is the name of a fetched file whose URL path has none, as
	// buildkit names it.
	unnamed = "__unnamed__"
)

// Remote is a file an ADD fetched from a URL, kept in a temporary file.
type Remote struct {
	URL string
	// Name is the last element of the URL's path ("__unnamed__" without
	// one), the file's name in a destination directory.
	Name string
	// Path is the temporary file; Close removes it.
	Path string
	Size int64
	// Digest is "sha256:<hex>" of the content.
	Digest string
	// ModTime is the answer's Last-Modified, else the Unix epoch (as
	// buildkit sets it).
	ModTime time.Time
}

// Close removes the temporary file.
func (r *Remote) Close() error { return os.Remove(r.Path) }

// Fetcher fetches the URLs of ADD.
type Fetcher struct {
	// Dial makes every connection of a fetch, redirects' included
	// (network "tcp", addr "host:port"): it applies the build's egress
	// policy.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Dir is where the temporary files are written.
	Dir string
	// MaxBytes bounds a file (default MaxFetchBytes); Timeout a fetch
	// (default FetchTimeout).
	MaxBytes int64
	Timeout  time.Duration
}

// IsURL says src is a URL source of ADD (http or https, not a git
// repository).
func IsURL(src string) bool {
	return (strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")) && !isGit(src)
}

// checksumHashes are the algorithms ADD --checksum takes.
var checksumHashes = map[string]func() hash.Hash{"sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New}

// ParseChecksum checks an ADD --checksum value ("sha256:<hex>").
func ParseChecksum(c string) (algo, sum string, err error) {
	algo, sum, _ = strings.Cut(c, ":")
	h, ok := checksumHashes[algo]
	if !ok {
		return "", "", fmt.Errorf("--checksum=%s: give sha256:<hex> (or sha384:, sha512:)", clip(c))
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != h().Size() || strings.ToLower(sum) != sum {
		return "", "", fmt.Errorf("--checksum=%s: not a lowercase hex %s digest", clip(c), algo)
	}
	return algo, sum, nil
}

// Fetch GETs rawURL into a temporary file of f.Dir, at most f.MaxBytes,
// within f.Timeout. A checksum ("" for none) the content does not have
// is S001 saying both; so is an answer other than 200, or a file over
// the bound.
func (f Fetcher) Fetch(ctx context.Context, rawURL, checksum string) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errdefs.Malformed("%s is not an http or https URL", clip(rawURL))
	}
	maxBytes, timeout := f.MaxBytes, f.Timeout
	if maxBytes <= 0 {
		maxBytes = MaxFetchBytes
	}
	if timeout <= 0 {
		timeout = FetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:           f.Dial,
			Proxy:                 nil, // the policy decides, never a proxy of the daemon's environment
			ForceAttemptHTTP2:     true,
			DisableCompression:    true, // the bytes as served
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: time.Minute,
			MaxIdleConns:          1,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			return nil
		},
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errdefs.Malformed("%s: %v", clip(rawURL), err)
	}
	req.Header.Set("User-Agent", "hutch-template-build")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("fetching %s: no answer within %s", clip(rawURL), timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("fetching %s: %w", clip(rawURL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errdefs.Malformed("fetching %s: the server answered %s", clip(rawURL), resp.Status)
	}
	if resp.ContentLength > maxBytes {
		return nil, errdefs.Malformed("fetching %s: %d bytes, more than the %d MiB an ADD fetches", clip(rawURL), resp.ContentLength, maxBytes>>20)
	}
	tmp, err := os.CreateTemp(f.Dir, "fetch-")
	if err != nil {
		return nil, err
	}
	r := &Remote{URL: rawURL, Name: unnamed, Path: tmp.Name(), ModTime: time.Unix(0, 0)}
	if base := path.Base(u.Path); base != "." && base != "/" {
		r.Name = base
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		if t, err := http.ParseTime(lm); err == nil {
			r.ModTime = t
		}
	}
	sha := sha256.New()
	hashes := []io.Writer{tmp, sha}
	var want hash.Hash
	algo, sum, _ := strings.Cut(checksum, ":")
	if checksum != "" {
		if _, _, err := ParseChecksum(checksum); err != nil {
			tmp.Close()
			r.Close()
			return nil, errdefs.Malformed("%v", err)
		}
		want = checksumHashes[algo]()
		hashes = append(hashes, want)
	}
	r.Size, err = io.Copy(io.MultiWriter(hashes...), io.LimitReader(resp.Body, maxBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("fetching %s: not done within %s", clip(rawURL), timeout)
	case err != nil:
		err = fmt.Errorf("fetching %s: %w", clip(rawURL), err)
	case r.Size > maxBytes:
		err = errdefs.Malformed("fetching %s: more than the %d MiB an ADD fetches", clip(rawURL), maxBytes>>20)
	case want != nil && hex.EncodeToString(want.Sum(nil)) != sum:
		err = errdefs.Malformed("ADD --checksum: %s has %s:%s, not the %s given", clip(rawURL), algo, hex.EncodeToString(want.Sum(nil)), checksum)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Digest = "sha256:" + hex.EncodeToString(sha.Sum(nil))
	return r, nil
}

// PackRemote writes r as a tar stream to w: the file at dest (in it, by
// its name, when dest ends in "/"), mode 0600 or o.Chmod, its time
// r.ModTime; with o.Unpack and a tar (plain or gzip), its entries under
// dest instead. The paths written are appended to paths.
func PackRemote(w io.Writer, r *Remote, dest string, o CopyOptions, paths *[]string) error {
	mode, err := chmodOf(o.Chmod)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	put := func(name string, hdr *tar.Header, body io.Reader) error {
		hdr.Name = strings.TrimPrefix(name, "/")
		if mode >= 0 && hdr.Typeflag != tar.TypeSymlink {
			hdr.Mode = mode
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, body); err != nil {
			return err
		}
		*paths = append(*paths, name)
		return nil
	}
	file, err := os.Open(r.Path)
	if err != nil {
		return err
	}
	defer file.Close()
	if o.Unpack {
		ok, err := unpackInto(file, path.Join(dest, "."), MaxFetchBytes, func(name string, hdr *tar.Header, data []byte) error {
			return put(name, hdr, bytes.NewReader(data))
		})
		if err != nil {
			return errdefs.Malformed("ADD --unpack %s: %v", clip(r.URL), err)
		}
		if ok {
			return tw.Close()
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	target := path.Clean(dest)
	if strings.HasSuffix(dest, "/") {
		target = path.Join(dest, r.Name)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Mode: 0o600, Size: r.Size, ModTime: r.ModTime, Format: tar.FormatPAX}
	if err := put(target, hdr, file); err != nil {
		return err
	}
	return tw.Close()
}
