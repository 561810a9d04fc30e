package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Defaults of the local socket (`hutch serve --socket`).
const (
	DefaultSocket      = "/run/hutch/hutch.sock"
	DefaultSocketGroup = "hutch"
	// socketMode lets the owner and the socket's group connect.
	socketMode = 0o660
)

// listenSocket binds the local Unix socket at path, mode 0660 and group
// group, so that the group's members use the API without a token or a TCP
// port (as Docker's socket). A file left there by a daemon that died is
// replaced; a socket that answers is another daemon's, an error. A group
// that does not exist leaves the socket to its owner, said in the log.
func listenSocket(path, group string, log *slog.Logger) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("--socket %s: the path exists and is not a socket; remove it or pass another path", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("--socket %s: another daemon answers on it: stop it, or pass --socket with another path", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--socket %s: removing the stale socket: %w", path, err)
		}
	}
	// The socket is created without any access, then opened to its group.
	old := syscall.Umask(0o777)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	if err := chgrp(path, group, log); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Chmod(path, socketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	return ln, nil
}

// chgrp gives path to group ("" keeps the process's group).
func chgrp(path, group string, log *slog.Logger) error {
	if group == "" {
		return nil
	}
	g, err := user.LookupGroup(group)
	var unknown user.UnknownGroupError
	if errors.As(err, &unknown) {
		log.Warn("the local socket's group does not exist: only the daemon's user may use the socket (create it with `groupadd --system "+group+"`, or pass --socket-group)",
			"socket", path, "group", group)
		return nil
	}
	if err != nil {
		return fmt.Errorf("--socket-group %s: %w", group, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return fmt.Errorf("--socket-group %s: gid %q: %w", group, g.Gid, err)
	}
	if err := os.Lchown(path, -1, gid); err != nil {
		return fmt.Errorf("--socket-group %s: %w", group, err)
	}
	return nil
}
