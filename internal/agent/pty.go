package agent

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// ptyStdio makes a child's stdio of a new PTY of the given size: the
// child's stdin, stdout and stderr are its terminal side, which becomes its
// controlling terminal (spawn starts it in a new session); we read its
// output from the master and write its input to a second descriptor of it.
func ptyStdio(size *agentv1.PtySize) (_ *childIO, err error) {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	fds := []int{master}
	defer func() {
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}()
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return nil, fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(master, unix.TIOCGPTN)
	if err != nil {
		return nil, fmt.Errorf("naming the pty: %w", err)
	}
	tty, err := unix.Open("/dev/pts/"+strconv.FormatUint(uint64(n), 10), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the pty's terminal: %w", err)
	}
	fds = append(fds, tty)
	if err := setPtySize(master, size); err != nil {
		return nil, err
	}
	input, err := unix.FcntlInt(uintptr(master), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the pty: %w", err)
	}
	fds = append(fds, input)
	// The flag is the file description's: both descriptors are pollable.
	if err := unix.SetNonblock(master, true); err != nil {
		return nil, fmt.Errorf("pty: %w", err)
	}
	out := os.NewFile(uintptr(master), "pty")
	return &childIO{
		child:  [3]int{tty, tty, tty},
		in:     os.NewFile(uintptr(input), "pty-input"),
		out:    []*os.File{out},
		pty:    out,
		closes: []int{tty},
	}, nil
}

// setPtySize sets the window size of the PTY whose master is fd; the
// kernel tells the terminal's foreground process group with SIGWINCH.
func setPtySize(fd int, size *agentv1.PtySize) error {
	ws := &unix.Winsize{Row: uint16(size.GetRows()), Col: uint16(size.GetCols())}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws); err != nil {
		return fmt.Errorf("resizing the pty: %w", err)
	}
	return nil
}
