package egressproxy

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// originalDst is where a redirected connection was going: conntrack's
// destination before the DNAT (SO_ORIGINAL_DST).
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var mreq *unix.IPv6Mreq
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		// A sockaddr_in fits the 20 bytes of an ipv6_mreq.
		mreq, gerr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
	}); err != nil {
		return netip.AddrPort{}, err
	}
	if gerr != nil {
		return netip.AddrPort{}, gerr
	}
	b := mreq.Multiaddr // sockaddr_in: family, port (big endian), address
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]}), binary.BigEndian.Uint16(b[2:4])), nil
}
