package agent

// ring keeps the last size bytes written to one output stream, addressed by
// absolute offsets: the offset of a byte is how many bytes the stream had
// before it. Its memory grows with what is written, up to size. Its owner's
// lock guards it.
type ring struct {
	size int
	// buf holds the bytes [end-len(buf), end); once full, the byte at
	// offset o is buf[o%size].
	buf []byte
	end int64
}

func newRing(size int) ring { return ring{size: size} }

// start is the offset of the oldest byte the ring holds.
func (r *ring) start() int64 { return r.end - int64(len(r.buf)) }

// write appends b, dropping the oldest bytes past size.
func (r *ring) write(b []byte) {
	if len(b) >= r.size {
		if cap(r.buf) < r.size {
			r.buf = make([]byte, r.size)
		}
		r.buf = r.buf[:r.size]
		r.end += int64(len(b))
		tail := b[len(b)-r.size:]
		k := copy(r.buf[(r.end-int64(r.size))%int64(r.size):], tail)
		copy(r.buf, tail[k:])
		return
	}
	if room := r.size - len(r.buf); room > 0 {
		n := min(room, len(b))
		if len(r.buf)+n > cap(r.buf) {
			grown := make([]byte, len(r.buf), min(r.size, max(2*cap(r.buf), len(r.buf)+n)))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, b[:n]...)
		r.end += int64(n)
		b = b[n:]
	}
	for len(b) > 0 {
		n := copy(r.buf[r.end%int64(r.size):], b)
		r.end += int64(n)
		b = b[n:]
	}
}

// read copies up to limit bytes from offset from, or from the oldest byte
// held when from is older, and returns them with their offset. from must
// not be past end.
func (r *ring) read(from int64, limit int) ([]byte, int64) {
	return r.readInto(nil, from, limit)
}

// readInto is read into dst's memory when it holds them, else a new
// buffer.
func (r *ring) readInto(dst []byte, from int64, limit int) ([]byte, int64) {
	at := max(from, r.start())
	n := int(min(r.end-at, int64(limit)))
	if n <= 0 {
		return nil, at
	}
	out := dst[:0]
	if cap(out) < n {
		out = make([]byte, n)
	}
	out = out[:n]
	if len(r.buf) < r.size {
		copy(out, r.buf[at:])
		return out, at
	}
	i := int(at % int64(r.size))
	k := copy(out, r.buf[i:])
	copy(out[k:], r.buf)
	return out, at
}
