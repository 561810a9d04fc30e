package gvisor

import (
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Networking. A sandbox without Network runs with runsc --network=none:
// gVisor's netstack has loopback only. With Network, the daemon's network
// service has pinned a namespace holding the sandbox end of a veth (eth0,
// with its address and default route); the OCI spec names that namespace
// and runsc --network=sandbox makes the Sentry's netstack take over the
// interfaces it finds there. The sandbox's /etc/resolv.conf is a
// read-only bind mount of the attachment's. The service tears the
// namespace down after Destroy.

// withNetwork points the OCI spec of a sandbox with bundle dir at its
// network's namespace and mounts its resolv.conf over the image's;
// without a network it changes nothing.
func withNetwork(s *specs.Spec, nw *runtime.NetworkAttachment, dir string) {
	if nw == nil {
		return
	}
	for i, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			s.Linux.Namespaces[i].Path = nw.NetnsPath
		}
	}
	// runsc cannot create a mount point in the read-only image: an image
	// without a regular /etc/resolv.conf keeps what it has.
	if fi, err := os.Lstat(filepath.Join(dir, "rootfs", "etc", "resolv.conf")); err != nil || !fi.Mode().IsRegular() || nw.ResolvConf == "" {
		return
	}
	s.Mounts = append(s.Mounts, specs.Mount{
		Destination: "/etc/resolv.conf",
		Type:        "bind",
		Source:      nw.ResolvConf,
		Options:     []string{"bind", "ro", "nosuid", "nodev", "noexec"},
	})
}

// networkFlag is runsc's --network for a sandbox.
func networkFlag(spec runtime.Spec) string {
	if spec.Network != nil {
		return "--network=sandbox"
	}
	return "--network=none"
}
