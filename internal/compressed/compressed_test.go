package compressed_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"

	"github.com/hutch-dev/hutch/internal/compressed"
)

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t *testing.T, b []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// content is a tar-like payload: a plain tar stream starts with a name.
var content = []byte(strings.Repeat("dir/file.txt\x00 some content of a tar stream ", 4000))

func TestDetectAndDecode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
		want   compressed.Format
	}{
		{"plain", content, compressed.None},
		{"gzip", gzipped(t, content), compressed.Gzip},
		{"zstd", zstded(t, content), compressed.Zstd},
		{"short", []byte("ab"), compressed.None},
		{"empty", nil, compressed.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compressed.Detect(tc.stream); got != tc.want {
				t.Errorf("Detect = %s, want %s", got, tc.want)
			}
			// One byte at a time: the peek must not need a full read.
			r, f, err := compressed.NewReader(iotest.OneByteReader(bytes.NewReader(tc.stream)))
			if err != nil || f != tc.want {
				t.Fatalf("NewReader: %s, %v", f, err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			want := content
			if len(tc.stream) < 10 {
				want = tc.stream
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("decoded %d bytes (%v), want %d", len(got), err, len(want))
			}
		})
	}
}

func TestRefusedAndCorrupt(t *testing.T) {
	gz := gzipped(t, content)
	big := zstded(t, content, zstd.WithWindowSize(64<<20), zstd.WithEncoderLevel(zstd.SpeedFastest))
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"bzip2", []byte("BZh91AY&SY rest")},
		{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0, 1, 2}},
		{"truncated gzip", gz[:len(gz)/2]},
		{"corrupt gzip", append(append([]byte{}, gz[:20]...), bytes.Repeat([]byte{0xff}, 200)...)},
		{"zstd window over the bound", big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, err := compressed.NewReader(bytes.NewReader(tc.stream))
			if err == nil {
				_, err = io.ReadAll(r)
				r.Close()
			}
			var ce *compressed.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a CorruptError", err)
			}
		})
	}
}

// TestSourceErrorsPassThrough: a failure to read the stream itself is not
// the stream's corruption.
func TestSourceErrorsPassThrough(t *testing.T) {
	cut := errors.New("client went away")
	gz := gzipped(t, content)
	for _, stream := range [][]byte{content, gz} {
		r, _, err := compressed.NewReader(io.MultiReader(bytes.NewReader(stream[:len(stream)/2]), iotest.ErrReader(cut)))
		if err == nil {
			_, err = io.ReadAll(r)
		}
		var ce *compressed.CorruptError
		if !errors.Is(err, cut) || errors.As(err, &ce) {
			t.Errorf("error %v, want the source's own", err)
		}
	}
}

func TestGzippedRoundTrip(t *testing.T) {
	big := bytes.Repeat(content, 8) // several chunks
	zr, err := gzip.NewReader(compressed.Gzipped(iotest.HalfReader(bytes.NewReader(big))))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("round trip: %d bytes, %v", len(got), err)
	}
	cut := errors.New("agent gone")
	_, err = io.ReadAll(compressed.Gzipped(io.MultiReader(bytes.NewReader(big), iotest.ErrReader(cut))))
	if !errors.Is(err, cut) {
		t.Errorf("a failing source: %v", err)
	}
}
