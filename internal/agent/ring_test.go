package agent

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
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

// TestCutKeepsWhatThePipeHolds: when run cuts the reads short (the
// process exited and its drain was not scheduled within pipeGrace, as on
// a busy machine), the bytes the pipe already holds still reach the ring;
// the writer end stays open, as a child left behind would hold it.
func TestCutKeepsWhatThePipeHolds(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	want := bytes.Repeat([]byte("0123456789"), 6000) // under a pipe's 64 KiB
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	p := &proc{out: [2]ring{newRing(1 << 20), newRing(1 << 20)}, changed: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	_ = r.SetReadDeadline(time.Now()) // run's cut, before the drain's first read
	if !p.fill(stdout, r) {
		t.Fatal("fill did not see the cut")
	}
	if got, _ := p.out[stdout].read(0, len(want)+1); !bytes.Equal(got, want) {
		t.Errorf("the ring holds %d of the %d bytes the pipe held at the cut", len(got), len(want))
	}
}
