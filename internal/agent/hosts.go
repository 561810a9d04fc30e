package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
)

// The sandbox's /etc/hosts, as container runtimes write one: localhost
// for IPv4 and IPv6, and the sandbox's host name at its own address (its
// network's lease) or, without a network, at 127.0.1.1, so that
// "localhost" and `hostname -f` resolve with or without a network. The
// agent writes it when it starts and again when a restored sandbox
// relinks (its address may be another), in the sandbox's own writable
// layer: nothing of the host is written, and root in the sandbox may edit
// it like any other file. hutch's lines form a block between two marks
// that is replaced each time; the image's own lines, and lines added in
// the sandbox (kept by a template or snapshot), follow it unchanged.
// Names of sandbox-network peers are not written: hutch's resolver
// answers for them, and they change while the sandbox runs.

// HostsPath is the file WriteHosts writes.
const HostsPath = "/etc/hosts"

// Marks around hutch's block in /etc/hosts.
const (
	hostsBegin = "# hutch: the lines from here to the end mark are rewritten when the sandbox starts"
	hostsEnd   = "# hutch: end"
)

// noNetworkHostAddr is where the host name points without a network
// (Debian's convention: loopback, but not localhost's own address).
var noNetworkHostAddr = netip.MustParseAddr("127.0.1.1")

// hostnameRE matches a host name worth writing (RFC 1123 labels).
var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$`)

// WriteHosts (re)writes path (HostsPath in a sandbox) for this sandbox's
// host name and address. It replaces a symlink with a regular file
// rather than write where it points.
func WriteHosts(path string) error {
	hostname, _ := os.Hostname()
	var old []byte
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if old, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	} else if err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	content := hostsFile(old, hostname, ownAddr())
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".hosts-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// rename replaces a symlink itself, never its target.
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// hostsFile is the content of /etc/hosts: hutch's block for hostname at
// addr (127.0.1.1 when invalid), then old's lines without its earlier
// block.
func hostsFile(old []byte, hostname string, addr netip.Addr) []byte {
	var b bytes.Buffer
	b.WriteString(hostsBegin + "\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")
	if hostname != "localhost" && hostnameRE.MatchString(hostname) {
		if !addr.IsValid() {
			addr = noNetworkHostAddr
		}
		fmt.Fprintf(&b, "%s\t%s\n", addr, hostname)
	}
	b.WriteString(hostsEnd + "\n")
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 4096), 1<<20)
	inBlock := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == hostsBegin:
			inBlock = true
		case inBlock:
			inBlock = line != hostsEnd
		default:
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// ownAddr is the sandbox's IPv4 address: that of its one network
// interface that is up and not loopback; invalid without a network.
func ownAddr() netip.Addr {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && ip.IsGlobalUnicast() {
					return ip
				}
			}
		}
	}
	return netip.Addr{}
}
