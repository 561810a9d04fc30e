package microvm

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// minMemoryMB is the least memory a VM gets: its kernel and agent need
// some of it before the sandbox's processes get any.
const minMemoryMB = 192

// vmConfig is one VM's QEMU command line, in parts.
type vmConfig struct {
	accel    string // "kvm" or "tcg"
	kernel   string
	initrd   string
	rootDisk string // the image's disk, attached read-only
	rwDisk   string // the writable layer's disk, or "" (a tmpfs in the guest)
	socket   string // unix socket QEMU listens on for the agent's port
	tapFD    int    // QEMU's descriptor of a TAP device, or 0: no network
	mac      net.HardwareAddr
	cpus     uint32
	memoryMB uint32
	cmdline  string
}

// qemuArgs are QEMU's arguments for c: the microvm machine with nothing
// but a serial console (isa-serial: the kernel's console; the microvm
// machine also needs its RTC to boot), the root disk and the agent's
// virtio-serial port. QEMU exits when the guest's kernel panics, which it
// does when the agent, its init, exits.
func qemuArgs(c vmConfig) []string {
	args := []string{
		"-M", "microvm,isa-serial=on",
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-serial", "stdio",
		// The monitor (pause, resume), by a name relative to QEMU's
		// directory like the agent's socket.
		"-qmp", "unix:" + qmpSocketName + ",server=on,wait=off",
	}
	if c.accel == AccelKVM {
		args = append(args, "-accel", "kvm", "-cpu", "host,-arch-capabilities")
	} else {
		args = append(args, "-accel", "tcg,tb-size=64", "-cpu", "max")
	}
	cpus := max(c.cpus, 1)
	args = append(args,
		"-smp", strconv.FormatUint(uint64(cpus), 10),
		"-m", strconv.FormatUint(uint64(max(c.memoryMB, minMemoryMB)), 10),
		"-kernel", c.kernel, "-initrd", c.initrd, "-append", c.cmdline,
		"-drive", "id=root,file="+c.rootDisk+",format=raw,if=none,readonly=on",
		"-device", "virtio-blk-device,drive=root,serial="+vmspec.RootSerial,
	)
	if c.rwDisk != "" {
		// Discarded on stop: no flush is worth waiting for.
		args = append(args,
			"-drive", "id=rw,file="+c.rwDisk+",format=raw,if=none,cache=unsafe",
			"-device", "virtio-blk-device,drive=rw,serial="+vmspec.RWSerial)
	}
	if c.tapFD > 0 {
		args = append(args,
			"-netdev", "tap,id=net0,fd="+strconv.Itoa(c.tapFD),
			"-device", "virtio-net-device,netdev=net0,mac="+c.mac.String())
	}
	// The guest reports the memory it frees, and QEMU gives it back to the
	// host: measured 285 → 251 MiB of RSS for an idle 512 MiB VM (TCG).
	args = append(args, "-device", "virtio-balloon-device,free-page-reporting=on")
	return append(args,
		"-device", "virtio-serial-device",
		"-chardev", "socket,id=agent,path="+c.socket+",server=on,wait=off",
		"-device", "virtserialport,chardev=agent,name="+vmspec.PortName,
	)
}

// hostnameRE matches the host names put on the kernel command line (one
// word, no "=").
var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)

// guestParams are what the guest init is told on the kernel command line.
type guestParams struct {
	hostname string
	// rwDisk: the writable layer is the writable disk; otherwise a tmpfs
	// of writableMB (0: bounded by memory only).
	rwDisk     bool
	writableMB uint64
	pidsMax    uint64 // 0: no task limit
	net        guestNet
	// tscKHz (under TCG, whose guest TSC is the host's) spares the guest
	// kernel its TSC calibration against the emulated PIT, which fails on
	// a busy host and then hangs the boot; tsc=reliable keeps it from
	// later distrusting the TSC for the jitter of emulation.
	tscKHz uint64
}

// kernelCmdline is the guest kernel's command line: the serial console,
// reboot (so QEMU exit) at once on panic, and the vmspec keys of p.
func kernelCmdline(p guestParams) string {
	words := []string{"console=ttyS0", "panic=-1", "quiet", "cryptomgr.notests", vmspec.KeyVM + "=1"}
	if p.tscKHz > 0 {
		words = append(words, fmt.Sprintf("tsc_early_khz=%d", p.tscKHz), "tsc=reliable")
	}
	if hostnameRE.MatchString(p.hostname) {
		words = append(words, vmspec.KeyHostname+"="+p.hostname)
	}
	switch {
	case p.rwDisk:
		words = append(words, vmspec.KeyWritableDisk+"=1")
	case p.writableMB > 0:
		words = append(words, fmt.Sprintf("%s=%d", vmspec.KeyWritableMB, p.writableMB))
	}
	if p.pidsMax > 0 {
		words = append(words, fmt.Sprintf("%s=%d", vmspec.KeyPidsMax, p.pidsMax))
	}
	if p.net.addr.IsValid() {
		words = append(words, vmspec.KeyAddr+"="+p.net.addr.String(), vmspec.KeyGateway+"="+p.net.gateway.String())
		if p.net.dns.IsValid() {
			words = append(words, vmspec.KeyDNS+"="+p.net.dns.String())
		}
	}
	return strings.Join(words, " ")
}
