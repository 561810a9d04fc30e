// Package vmspec is the contract between the microVM runtime on the host
// (internal/runtime/microvm) and hutch-agent when it is a VM's init: the
// kernel command line keys, the device names and the initramfs layout.
// Both sides import it, so that they cannot drift apart.
package vmspec

import (
	"strconv"
	"strings"
)

// Kernel command line keys the runtime sets and the guest init reads.
const (
	// KeyVM=1 tells hutch-agent, as PID 1, that it is a microVM's init.
	KeyVM = "hutch.vm"
	// KeyHostname is the sandbox's host name.
	KeyHostname = "hutch.hostname"
	// KeyWritableMB bounds the writable layer in MiB when it is a tmpfs
	// (no writable disk); 0 or absent leaves tmpfs's default, half the
	// VM's memory.
	KeyWritableMB = "hutch.writable_mb"
	// KeyWritableDisk=1 says the writable layer is the disk RWSerial.
	KeyWritableDisk = "hutch.writable_disk"
	// KeyPidsMax caps the tasks in the sandbox, the agent's included (a
	// pids cgroup); absent leaves them unbounded but for memory.
	KeyPidsMax = "hutch.pids_max"
	// KeyAddr is the sandbox's address with its prefix length
	// (10.200.0.2/30) on its network interface; absent: no network.
	KeyAddr = "hutch.addr"
	// KeyGateway is the default route's gateway of a sandbox with KeyAddr.
	KeyGateway = "hutch.gateway"
	// KeyDNS is the nameserver /etc/resolv.conf names.
	KeyDNS = "hutch.dns"
)

// Device names.
const (
	// PortName is the name of the virtio-serial port that carries the
	// agent's session (virtserialport,name=PortName).
	PortName = "hutch.agent"
	// RootSerial is the serial of the virtio-blk disk that holds the
	// image's root filesystem, read-only (virtio-blk-device,serial=...).
	RootSerial = "hutch-root"
	// RWSerial is the serial of the virtio-blk disk that holds the
	// sandbox's writable layer, an empty file system of RootFSType.
	RWSerial = "hutch-rw"
	// RootFSType is the file system of the root and writable disks.
	RootFSType = "ext4"
)

// Initramfs layout.
const (
	// InitPath is the agent binary in the initramfs (the kernel runs /init).
	InitPath = "/init"
	// ModulesDir holds the kernel modules the init loads, in the order of
	// their file names (each starts with a two-digit position).
	ModulesDir = "/lib/modules/hutch"
	// EgressCAPath (issue 37) is hutch's egress CA (PEM) in the initramfs
	// of a sandbox whose network attachment names one; the init appends it
	// to the image's TrustedBundle.
	EgressCAPath = "/egress-ca.pem"
	// TrustedBundle is where Debian-like images keep their trusted CAs,
	// which OpenSSL, Python, curl and git read (relative to the root).
	TrustedBundle = "etc/ssl/certs/ca-certificates.crt"
)

// Params parses a kernel command line into its key=value words; a word
// without "=" maps to "". Quoting is not supported: the runtime never
// writes a value with a space.
func Params(cmdline string) map[string]string {
	p := map[string]string{}
	for _, w := range strings.Fields(cmdline) {
		k, v, _ := strings.Cut(w, "=")
		p[k] = v
	}
	return p
}

// InVM reports whether a kernel command line marks a hutch microVM.
func InVM(cmdline string) bool { return Params(cmdline)[KeyVM] == "1" }

// WritableMB is the writable layer's bound from the command line, or 0.
func WritableMB(p map[string]string) uint64 { return number(p, KeyWritableMB) }

// PidsMax is the task limit from the command line, or 0.
func PidsMax(p map[string]string) uint64 { return number(p, KeyPidsMax) }

// number is the decimal value of key in p, or 0.
func number(p map[string]string, key string) uint64 {
	n, err := strconv.ParseUint(p[key], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
