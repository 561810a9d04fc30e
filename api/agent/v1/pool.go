package agentv1

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Pool is the buffer pool of the agent connection, on both sides (gRPC's
// transport reads each HTTP/2 frame into one of its buffers, and Codec
// marshals into them): gRPC's default pool zeroes the whole of a buffer on
// each Get, a fifth of the copying work of a streamed exec's output in the
// daemon, and allocates a zeroed one for each message over 1 MiB (every
// full output chunk). Its buffers are not zeroed: each user writes all of
// the length it asked for before reading it (a frame is read in full, a
// message marshaled in full), so no earlier bytes are ever seen.
var Pool mem.BufferPool = &dirtyPool{}

// Pooled buffers are powers of two from 256 bytes to 2 MiB (an output
// chunk with its header); larger ones are allocated.
const (
	minPoolShift = 8
	maxPoolShift = 21
)

type dirtyPool struct {
	tiers [maxPoolShift - minPoolShift + 1]sync.Pool
}

// tier is the index of the smallest tier holding n bytes, or -1.
func tier(n int) int {
	if n > 1<<maxPoolShift {
		return -1
	}
	shift := max(bits.Len(uint(n-1)), minPoolShift)
	if n <= 1 {
		shift = minPoolShift
	}
	return shift - minPoolShift
}

func (p *dirtyPool) Get(n int) *[]byte {
	t := tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+minPoolShift))
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if t := tier(c); t >= 0 && c == 1<<(t+minPoolShift) {
		p.tiers[t].Put(b)
	}
}
