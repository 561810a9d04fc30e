package agent

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRing writes a known sequence in pieces of many sizes and checks
// what each offset reads back: the last size bytes, at their offsets.
func TestRing(t *testing.T) {
	const size = 16
	all := make([]byte, 200)
	for i := range all {
		all[i] = byte(i)
	}
	for _, piece := range []int{1, 3, 7, 15, 16, 17, 40, 200} {
		t.Run(fmt.Sprint(piece), func(t *testing.T) {
			r := newRing(size)
			for w := 0; w < len(all); {
				n := min(piece, len(all)-w)
				r.write(all[w : w+n])
				w += n
				if r.end != int64(w) {
					t.Fatalf("end = %d after %d bytes", r.end, w)
				}
				if len(r.buf) > size || cap(r.buf) > size {
					t.Fatalf("ring holds %d bytes (cap %d), more than %d", len(r.buf), cap(r.buf), size)
				}
				start := int64(max(0, w-size))
				if r.start() != start {
					t.Fatalf("start = %d after %d bytes, want %d", r.start(), w, start)
				}
				for from := int64(0); from <= int64(w); from++ {
					got, at := r.read(from, 5)
					wantAt := max(from, start)
					want := all[wantAt:min(wantAt+5, int64(w))]
					if at != wantAt || !bytes.Equal(got, want) {
						t.Fatalf("after %d bytes read(%d) = %v at %d, want %v at %d", w, from, got, at, want, wantAt)
					}
				}
			}
		})
	}
}
