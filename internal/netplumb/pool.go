package netplumb

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
)

// blockBits is the prefix length of one sandbox's subnet: network address,
// gateway (the host end), sandbox address, broadcast.
const blockBits = 30

// CheckPool explains what is wrong with p as a pool of sandbox subnets: it
// must be a canonical IPv4 prefix between /8 and /30 outside the loopback,
// link-local, multicast and reserved ranges.
func CheckPool(p netip.Prefix) error {
	switch {
	case !p.IsValid() || !p.Addr().Is4():
		return fmt.Errorf("%s is not an IPv4 prefix", p)
	case p.Masked() != p:
		return fmt.Errorf("%s has host bits set (did you mean %s?)", p, p.Masked())
	case p.Bits() < 8 || p.Bits() > blockBits:
		return fmt.Errorf("%s must be between /8 and /%d (one /%d per sandbox)", p, blockBits, blockBits)
	}
	for _, r := range reserved {
		if r.Overlaps(p) {
			return fmt.Errorf("%s overlaps the reserved range %s", p, r)
		}
	}
	return nil
}

// reserved are ranges a pool may not touch.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/3"), // multicast, reserved, broadcast
}

// pool hands out /30 subnets of a prefix.
type pool struct {
	prefix netip.Prefix
}

// size is the number of subnets in the pool.
func (p pool) size() uint32 { return 1 << (blockBits - p.prefix.Bits()) }

// block returns the i-th subnet of the pool.
func (p pool) block(i uint32) netip.Prefix {
	return netip.PrefixFrom(fromU32(toU32(p.prefix.Addr())+i<<(32-blockBits)), blockBits)
}

// free returns the first subnet of the pool that overlaps none of used
// (the host's addresses and routes), or false when there is none.
func (p pool) free(used []netip.Prefix) (netip.Prefix, bool) {
	type span struct{ lo, hi uint32 } // subnet indices, inclusive
	base := toU32(p.prefix.Addr())
	last := lastU32(p.prefix)
	var spans []span
	for _, u := range used {
		u = u.Masked()
		if !u.Addr().Is4() || !u.Overlaps(p.prefix) {
			continue
		}
		lo := max(toU32(u.Addr()), base)
		hi := min(lastU32(u), last)
		spans = append(spans, span{(lo - base) >> (32 - blockBits), (hi - base) >> (32 - blockBits)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	next := uint32(0)
	for _, s := range spans {
		if s.lo > next {
			break
		}
		next = max(next, s.hi+1)
	}
	if next >= p.size() {
		return netip.Prefix{}, false
	}
	return p.block(next), true
}

// subnetAddrs returns the gateway (host end) and sandbox address of a /30.
func subnetAddrs(subnet netip.Prefix) (gateway, sandbox netip.Addr) {
	gateway = subnet.Addr().Next()
	return gateway, gateway.Next()
}

func toU32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func fromU32(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// lastU32 is the last address of an IPv4 prefix.
func lastU32(p netip.Prefix) uint32 {
	return toU32(p.Addr()) | (1<<(32-p.Bits()) - 1)
}
