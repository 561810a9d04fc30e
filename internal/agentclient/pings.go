package agentclient

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxPings bounds the yamux pings a sandbox may send over its session
// (issue 38: 5). Neither side pings (keepalives are off), and yamux answers
// each ping in a goroutine of its own that waits up to 10 s to write; a
// sandbox that sends more ends its session instead of holding the daemon's
// goroutines.
const MaxPings = 16

// errTooManyPings ends the session of a sandbox past MaxPings.
var errTooManyPings = &ProtocolError{What: fmt.Sprintf("it sent more than %d yamux pings", MaxPings)}

// yamux's frame types and the flag of a ping that asks an answer.
const (
	yamuxHeaderBytes = 12
	yamuxTypeData    = 0
	yamuxTypePing    = 2
	yamuxFlagSYN     = 1
)

// pingGuard reads the frames the sandbox's side sends, counting its pings
// (a data frame's body is skipped, every other frame is a header alone);
// past MaxPings its Read fails, which ends the yamux session, and over is
// called first.
type pingGuard struct {
	io.ReadWriteCloser
	over  func()
	hdr   [yamuxHeaderBytes]byte
	got   int    // bytes of hdr read
	body  uint32 // bytes of a data frame's body still to skip
	pings int
}

func (g *pingGuard) Read(p []byte) (int, error) {
	n, err := g.ReadWriteCloser.Read(p)
	if g.scan(p[:n]) {
		g.over()
		return 0, errTooManyPings
	}
	return n, err
}

// scan follows the frames in b and reports whether the pings passed MaxPings.
func (g *pingGuard) scan(b []byte) bool {
	for len(b) > 0 {
		if g.body > 0 {
			k := min(uint32(len(b)), g.body)
			g.body -= k
			b = b[k:]
			continue
		}
		k := copy(g.hdr[g.got:], b)
		g.got += k
		b = b[k:]
		if g.got < yamuxHeaderBytes {
			return false
		}
		g.got = 0
		switch g.hdr[1] {
		case yamuxTypeData:
			g.body = binary.BigEndian.Uint32(g.hdr[8:])
		case yamuxTypePing:
			if binary.BigEndian.Uint16(g.hdr[2:])&yamuxFlagSYN != 0 {
				if g.pings++; g.pings > MaxPings {
					return true
				}
			}
		}
	}
	return false
}
