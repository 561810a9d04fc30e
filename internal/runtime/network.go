package runtime

import "net/netip"

// NetworkAttachment is the network of a sandbox, made before Start by the
// daemon's network service (internal/netsvc), which also tears it down
// after Destroy: a runtime only joins it. The namespace at NetnsPath holds
// eth0, the sandbox end of a veth, with Addr (in a /Bits subnet) and a
// default route through Gateway; the host's side of it (addresses, NAT,
// firewall, DNS gate) is the service's. A runtime must not change it
// beyond what happens inside the namespace (a microVM bridges eth0 with a
// TAP device there and moves Addr into its guest), and must leave no
// reference to the namespace behind once Destroy returns.
type NetworkAttachment struct {
	// NetnsPath is the pinned network namespace the sandbox runs in.
	NetnsPath string
	// Addr is the sandbox's own address, Gateway the address at which it
	// reaches the host (its default route, its nameserver, and the
	// host's forwarded loopback ports); Bits is the subnet's length.
	Addr, Gateway netip.Addr
	Bits          int
	// ResolvConf is a host file holding the /etc/resolv.conf the sandbox
	// should see (read-only); Nameserver is its nameserver, zero if none.
	ResolvConf string
	Nameserver netip.Addr
	// CACert (issue 37) is a host file holding hutch's egress CA (PEM),
	// which the sandbox should trust: the runtime adds it to the image's
	// CA bundle where it can; "" for none.
	CACert string `json:",omitempty"`
}
