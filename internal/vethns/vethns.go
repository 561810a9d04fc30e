// Package vethns makes a network namespace joined to the host by a veth
// pair, with an address at each end of a /30: an address the host reaches
// only by routing, as it would a machine on its LAN, that never leaves the
// host. The integration tests' and the bench's servers listen in one.
// Making one needs root.
package vethns

import (
	"fmt"
	"os/exec"
	goruntime "runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// NS is one namespace and its veth pair.
type NS struct {
	// Name names the namespace and the veth's host end.
	Name string
	// HostAddr is the host end's address, Addr the one inside.
	HostAddr, Addr string
}

// Make makes namespace name, a veth pair into it (its host end also
// called name, the other eth0) and the addresses hostAddr and addr of a
// /30 at the two ends. On an error what was made is removed.
func Make(name, hostAddr, addr string) (_ *NS, err error) {
	n := &NS{Name: name, HostAddr: hostAddr, Addr: addr}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	for _, args := range [][]string{
		{"netns", "add", name},
		{"link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", name},
		{"addr", "add", hostAddr + "/30", "dev", name},
		{"link", "set", name, "up"},
		{"-n", name, "addr", "add", addr + "/30", "dev", "eth0"},
		{"-n", name, "link", "set", "eth0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return n, nil
}

// Inside runs f on a thread in the namespace: a socket f opens stays
// there. The thread ends with it.
func (n *NS) Inside(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread goes with the goroutine
		ns, err := netns.GetFromName(n.Name)
		if err == nil {
			err = netns.Set(ns)
			ns.Close()
		}
		if err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Close removes the veth pair and the namespace.
func (n *NS) Close() {
	_ = exec.Command("ip", "link", "del", n.Name).Run()
	_ = exec.Command("ip", "netns", "del", n.Name).Run()
}
