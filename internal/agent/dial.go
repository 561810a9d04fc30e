package agent

import (
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// dialChunk is the most bytes one Dial message carries: the port's reads
// start at firstDialChunk and double while they fill the buffer, so a
// large transfer crosses the sandbox's wall in few messages (issue 46: 5)
// and a quiet connection holds a small buffer.
const (
	dialChunk      = 256 << 10
	firstDialChunk = 32 << 10
)

// dialTimeout bounds connecting to the port.
const dialTimeout = 10 * time.Second

// Dial connects to a port on the sandbox's loopback and carries the
// connection's bytes both ways: the host ending its half shuts the
// connection's write side; the port ending its half ends the call.
func (s *Server) Dial(stream agentv1.Agent_DialServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	port := first.GetPort()
	if port == 0 || port > 65535 {
		return status.Errorf(codes.InvalidArgument, "port %d is not a TCP port", port)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), dialTimeout)
	if err != nil {
		return status.Errorf(codes.Unavailable, "nothing answers on port %d inside the sandbox: %v", port, err)
	}
	defer conn.Close()
	if err := stream.Send(&agentv1.DialMessage{Connected: true}); err != nil {
		return err
	}
	// Host → port: until the host ends its half (or the call ends).
	up := make(chan error, 1)
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					if tc, ok := conn.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					err = nil
				}
				up <- err
				return
			}
			if _, err := conn.Write(msg.GetData()); err != nil {
				up <- err
				return
			}
		}
	}()
	// Port → host: until the port ends its half.
	buf := make([]byte, firstDialChunk)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if serr := stream.Send(&agentv1.DialMessage{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if n == len(buf) && n < dialChunk {
			buf = make([]byte, 2*n)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The port is done sending: the connection ends (a
				// stream cannot end one half alone), and the host reads
				// EOF.
				return nil
			}
			return status.Errorf(codes.Aborted, "reading port %d: %v", port, err)
		}
	}
}
