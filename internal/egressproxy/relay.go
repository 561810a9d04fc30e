package egressproxy

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bounds of the relay.
const (
	// relayChunk is the most one splice(2) moves, and the size asked of
	// each pipe (as Go's own splice does).
	relayChunk = 1 << 20
	// relayBurst bounds the reads of one direction per wake-up (each
	// written on before the next), so that a download does not hold up
	// the other tunnels.
	relayBurst = 4
	// relayEvents is the events one epoll_wait returns at most.
	relayEvents = 64
)

// relay joins the tunnelled connections to their servers in one
// goroutine: an epoll instance of its own, which Go's poller watches,
// says which sockets are ready, and splice(2) moves their bytes through a
// pipe, in the kernel. Joined by goroutines, each tunnel costs two of
// them, with the scheduler's work to start, wake and park each; measured
// (BenchmarkNewConnection), the relay spends about a tenth less of the
// process's CPU per connection, at the same latency. (A thread of its
// own blocked in epoll_wait cost more: every wake-up then hands a P
// back and forth.)
type relay struct {
	epfd, stop int // the epoll instance; an eventfd that ends the loop
	// file and rc are epfd for Go's poller.
	file *os.File
	rc   syscall.RawConn

	mu     sync.Mutex
	tuns   map[int32]*tunnel // by both of their sockets; guarded by mu
	closed bool              // guarded by mu
	done   chan struct{}
}

// tunnel is two joined sockets (duplicates of their Go connections').
type tunnel struct {
	fds  [2]int32
	dirs [2]direction // 0: fds[0] to fds[1]; 1: the other way
	// events is each socket's epoll interest now.
	events  [2]uint32
	release func()
}

// direction is one way of a tunnel: src's bytes on their way to dst.
type direction struct {
	src, dst int
	pipe     [2]int
	buffered int  // bytes in the pipe
	eof      bool // src has no more to send
	shut     bool // dst has been half-closed: this way is done
}

// newRelay starts a relay, or fails where the kernel does not allow it
// (then the proxy joins connections with goroutines).
func newRelay() (*relay, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stop, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(stop)}); err != nil {
		unix.Close(epfd)
		unix.Close(stop)
		return nil, err
	}
	// Go's poller tells the loop when the epoll instance has events: the
	// loop is a goroutine like the others, woken the same way, not a
	// thread blocked in epoll_wait.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(stop)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "egress relay")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		unix.Close(stop)
		return nil, err
	}
	r := &relay{epfd: epfd, stop: stop, tuns: map[int32]*tunnel{}, done: make(chan struct{}), file: f, rc: rc}
	go r.loop()
	return r, nil
}

// join hands a and b to the relay, which closes them when both ways are
// done (each way half-closed after its last byte) or one fails, and then
// calls release. It fails, leaving a and b open, when they are not TCP
// sockets or the relay is closed.
func (r *relay) join(a, b net.Conn, release func()) error {
	fa, err := dupConn(a)
	if err != nil {
		return err
	}
	fb, err := dupConn(b)
	if err != nil {
		unix.Close(fa)
		return err
	}
	t := &tunnel{fds: [2]int32{int32(fa), int32(fb)}, release: release}
	t.dirs[0] = direction{src: fa, dst: fb, pipe: [2]int{-1, -1}}
	t.dirs[1] = direction{src: fb, dst: fa, pipe: [2]int{-1, -1}}
	for i := range t.dirs {
		if err := unix.Pipe2(t.dirs[i].pipe[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.closeFDs()
			return err
		}
		// Refused past the owner's pipe limits: the default size serves.
		_, _ = unix.FcntlInt(uintptr(t.dirs[i].pipe[0]), unix.F_SETPIPE_SZ, relayChunk)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		t.closeFDs()
		return net.ErrClosed
	}
	for i, fd := range t.fds {
		t.events[i] = unix.EPOLLIN | unix.EPOLLRDHUP
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: t.events[i], Fd: fd}); err != nil {
			// The Go connections still hold the sockets: closing the
			// duplicates would leave them in the epoll set.
			for _, added := range t.fds[:i] {
				_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, int(added), nil)
			}
			t.closeFDs()
			return err
		}
	}
	r.tuns[t.fds[0]], r.tuns[t.fds[1]] = t, t
	// The Go connections' own descriptors go; the duplicates keep the
	// sockets.
	a.Close()
	b.Close()
	return nil
}

// dupConn duplicates c's socket (non-blocking, as Go opened it).
func dupConn(c net.Conn) (int, error) {
	sc, ok := c.(*net.TCPConn)
	if !ok {
		return -1, errors.New("not a TCP connection")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// close stops the relay and cuts the tunnels it holds.
func (r *relay) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	_, _ = unix.Write(r.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	<-r.done
}

// loop waits for the tunnels' sockets and moves their bytes until close.
func (r *relay) loop() {
	defer close(r.done)
	defer r.shutdown()
	evs := make([]unix.EpollEvent, relayEvents)
	for {
		var n int
		var werr error
		err := r.rc.Read(func(uintptr) bool {
			n, werr = unix.EpollWait(r.epfd, evs, 0)
			return !(werr == nil && n == 0) && !errors.Is(werr, unix.EINTR)
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return
		}
		for _, ev := range evs[:n] {
			if int(ev.Fd) == r.stop {
				return
			}
			r.mu.Lock()
			t := r.tuns[ev.Fd]
			r.mu.Unlock()
			if t != nil {
				r.serve(t, ev)
			}
		}
	}
}

// shutdown closes every tunnel and the relay's own descriptors.
func (r *relay) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true // were the loop to stop on an error, joins now fail
	for fd, t := range r.tuns {
		if fd == t.fds[0] {
			t.end()
		}
	}
	clear(r.tuns)
	r.file.Close()
	unix.Close(r.stop)
}

// serve moves what t's sockets allow now, after ev on one of them, then
// ends t or sets the events it waits for. An error either way ends both
// (as a reset would).
func (r *relay) serve(t *tunnel, ev unix.EpollEvent) {
	failed := false
	for i := range t.dirs {
		if err := t.dirs[i].pump(); err != nil {
			failed = true
		}
	}
	// A socket hung up or failed after its last byte was read: what is
	// still owed to it can never go.
	if i := t.index(ev.Fd); ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 && i >= 0 && t.dirs[i].eof && !t.dirs[1-i].shut {
		failed = true
	}
	if failed || (t.dirs[0].shut && t.dirs[1].shut) {
		r.mu.Lock()
		delete(r.tuns, t.fds[0])
		delete(r.tuns, t.fds[1])
		r.mu.Unlock()
		t.end()
		return
	}
	for i, fd := range t.fds {
		// Socket i is the source of direction i and the destination of
		// the other one.
		var want uint32
		if in := &t.dirs[i]; !in.eof && in.buffered == 0 {
			want |= unix.EPOLLIN | unix.EPOLLRDHUP
		}
		if out := &t.dirs[1-i]; out.buffered > 0 {
			want |= unix.EPOLLOUT
		}
		if want != t.events[i] {
			t.events[i] = want
			_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, int(fd), &unix.EpollEvent{Events: want, Fd: fd})
		}
	}
}

// index is fd's place in t.fds, -1 if it is not t's.
func (t *tunnel) index(fd int32) int {
	for i, f := range t.fds {
		if f == fd {
			return i
		}
	}
	return -1
}

// pump moves d's bytes until a socket would block or src has been read
// relayBurst times: what it reads it writes before reading again, so it
// returns with bytes in the pipe only when dst is full (and waits for
// dst), else with the pipe empty (and waits for src). After src's last
// byte has gone, it half-closes dst. An error is the tunnel's end.
func (d *direction) pump() error {
	for reads := 0; !d.shut; {
		if d.buffered > 0 {
			n, blocked, err := spliceFD(d.pipe[0], d.dst, d.buffered)
			if blocked || err != nil {
				return err
			}
			d.buffered -= n
			continue
		}
		if d.eof {
			d.shut = true
			return unix.Shutdown(d.dst, unix.SHUT_WR)
		}
		if reads == relayBurst {
			return nil
		}
		reads++
		n, blocked, err := spliceFD(d.src, d.pipe[1], relayChunk)
		switch {
		case blocked || err != nil:
			return err
		case n == 0:
			d.eof = true
		default:
			d.buffered += n
		}
	}
	return nil
}

// spliceFD moves up to n bytes from fd src to fd dst without blocking, again
// after an interruption; blocked when either would block.
func spliceFD(src, dst, n int) (moved int, blocked bool, err error) {
	for {
		m, err := unix.Splice(src, nil, dst, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return 0, true, nil
		case err != nil:
			return 0, false, err
		}
		return int(m), false, nil
	}
}

// end closes t's sockets and pipes and releases its slot.
func (t *tunnel) end() {
	t.closeFDs()
	if t.release != nil {
		t.release()
	}
}

func (t *tunnel) closeFDs() {
	for _, fd := range t.fds {
		if fd >= 0 {
			unix.Close(int(fd))
		}
	}
	for _, d := range t.dirs {
		for _, p := range d.pipe {
			if p >= 0 {
				unix.Close(p)
			}
		}
	}
}
