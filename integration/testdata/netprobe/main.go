// Command netprobe runs inside a test sandbox (built static, uploaded):
// it looks at the sandbox's network as a program in it would, and forges
// packets as root in it could.
//
//	netprobe addr                 the IPv4 address the sandbox goes out with
//	netprobe resolve NAME         NAME's addresses, as Go's resolver finds them (/etc/hosts, then DNS)
//	netprobe localhost            serves on 127.0.0.1 and fetches from localhost: "ok"
//	netprobe serve PORT TEXT      serves TEXT to every TCP connection on PORT, until killed
//	netprobe dial HOST:PORT       connects (HOST resolved as "resolve" does) and prints what it reads
//	netprobe forge DST:PORT SRC…  a UDP datagram "forged SRC" to DST:PORT from each SRC through a
//	                              raw socket, then "genuine" through a plain one; prints
//	                              "raw sent N" or "raw refused: ERR"
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netprobe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: netprobe addr|resolve|localhost|forge")
	}
	switch args[0] {
	case "addr":
		c, err := net.Dial("udp4", "192.0.2.1:9")
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Println(c.LocalAddr().(*net.UDPAddr).IP)
	case "resolve":
		if len(args) != 2 {
			return fmt.Errorf("resolve NAME")
		}
		addrs, err := net.LookupHost(args[1])
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(addrs, " "))
	case "localhost":
		return localhost()
	case "serve":
		if len(args) != 3 {
			return fmt.Errorf("serve PORT TEXT")
		}
		return serve(args[1], args[2])
	case "dial":
		if len(args) != 2 {
			return fmt.Errorf("dial HOST:PORT")
		}
		c, err := net.DialTimeout("tcp4", args[1], 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(io.LimitReader(c, 4096))
		if err != nil {
			return err
		}
		fmt.Println(string(b))
	case "forge":
		if len(args) < 3 {
			return fmt.Errorf("forge DST:PORT SRC...")
		}
		return forge(args[1], args[2:])
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}

// serve writes text to every connection on port, on every address.
func serve(port, text string) error {
	ln, err := net.Listen("tcp4", ":"+port)
	if err != nil {
		return err
	}
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_, _ = io.WriteString(c, text)
		c.Close()
	}
}

// localhost serves one line on 127.0.0.1 and fetches it from
// localhost:port, as a client of a local server does.
func localhost() error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "ok\n")
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := net.DialTimeout("tcp", fmt.Sprintf("localhost:%d", port), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	fmt.Print(string(b))
	return nil
}

// forge sends the forged datagrams, then the genuine one.
func forge(dst string, srcs []string) error {
	to, err := netip.ParseAddrPort(dst)
	if err != nil || !to.Addr().Is4() {
		return fmt.Errorf("destination %q: want IPv4:port", dst)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		fmt.Println("raw refused:", err)
	} else {
		defer unix.Close(fd)
		sent := 0
		for _, s := range srcs {
			src, err := netip.ParseAddr(s)
			if err != nil || !src.Is4() {
				return fmt.Errorf("source %q: want IPv4", s)
			}
			pkt := udpPacket(src, to, []byte("forged "+s))
			if err := unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: to.Addr().As4()}); err != nil {
				fmt.Printf("raw refused: sendto from %s: %v\n", src, err)
				continue
			}
			sent++
		}
		if sent > 0 {
			fmt.Println("raw sent", sent)
		}
	}
	c, err := net.Dial("udp4", dst)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("genuine"))
	return err
}

// udpPacket is an IPv4 packet (header and all, for IP_HDRINCL) carrying
// a UDP datagram from src:40000 to dst.
func udpPacket(src netip.Addr, dst netip.AddrPort, payload []byte) []byte {
	const ipLen, udpLen = 20, 8
	p := make([]byte, ipLen+udpLen+len(payload))
	p[0] = 0x45 // IPv4, 5 words of header
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	p[8] = 64               // TTL
	p[9] = unix.IPPROTO_UDP // protocol
	s, d := src.As4(), dst.Addr().As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[10:], checksum(p[:ipLen]))
	u := p[ipLen:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen+len(payload)))
	// A zero UDP checksum is "none" over IPv4.
	copy(u[udpLen:], payload)
	return p
}

// checksum is the Internet checksum of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
