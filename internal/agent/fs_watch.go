package agent

// Watch: the changes under a directory, from inotify, which gVisor
// implements for its own filesystems. A recursive watch adds a watch for
// every directory below, and for each one created later; a rename is one
// event when both halves are seen (inotify's cookie), else a remove or a
// create. The kernel's queue is bounded: when it overflows, an "overflow"
// event says that events were lost.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// maxWatches bounds the directories one recursive watch follows.
const maxWatches = 8192

// watchMask is what a watch asks inotify for.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// Watch streams the changes under req.Path.
func (s *fsServer) Watch(req *agentv1.FsWatchRequest, stream agentv1.Fs_WatchServer) error {
	ctx := stream.Context()
	root, err := cleanPath("path", req.GetPath())
	if err != nil {
		return asStatus(ctx, "watch", req.GetPath(), err)
	}
	if fi, err := os.Stat(root); err != nil {
		return asStatus(ctx, "watch", root, err)
	} else if !fi.IsDir() {
		return asStatus(ctx, "watch", root, fault(kindWrongType, root, "watch %s: not a directory", root))
	}
	w, err := newWatcher(req.GetRecursive())
	if err != nil {
		return asStatus(ctx, "watch", root, err)
	}
	defer w.close()
	if err := w.add(root); err != nil {
		return asStatus(ctx, "watch", root, err)
	}
	// Closing the inotify descriptor ends a blocked read when the caller goes.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			w.interrupt()
		case <-stop:
		}
	}()
	if err := stream.Send(&agentv1.FsWatchEvent{Type: "ready", Path: root}); err != nil {
		return err
	}
	for {
		events, err := w.read()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return asStatus(ctx, "watch", root, err)
		}
		for _, e := range events {
			if err := stream.Send(e); err != nil {
				return err
			}
			if e.Type == "remove" && e.Path == root {
				return nil // the directory is gone: the watch ends
			}
		}
	}
}

// watcher is one inotify instance and the directories it watches.
type watcher struct {
	fd        int
	wake      [2]int // a pipe that interrupt writes to
	recursive bool
	dirs      map[int32]string // watch descriptor → directory
	root      int32            // the watched directory's own descriptor
	// moved holds the path of an IN_MOVED_FROM until its IN_MOVED_TO.
	moved map[uint32]string
	buf   []byte
}

func newWatcher(recursive bool) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	w := &watcher{fd: fd, recursive: recursive, root: -1, dirs: map[int32]string{}, moved: map[uint32]string{}, buf: make([]byte, 64<<10)}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return w, nil
}

// add watches dir, and with recursive every directory below it.
func (w *watcher) add(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // a directory that went meanwhile
		}
		if !d.IsDir() {
			return nil
		}
		if len(w.dirs) >= maxWatches {
			return fault(kindInvalid, dir, "watch %s: more than %d directories", dir, maxWatches)
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, watchMask)
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		w.dirs[int32(wd)] = p
		if w.root < 0 {
			w.root = int32(wd)
		}
		if !w.recursive {
			return filepath.SkipDir
		}
		return nil
	})
}

// interrupt ends a read in progress (and every later one).
func (w *watcher) interrupt() { _, _ = unix.Write(w.wake[1], []byte{0}) }

func (w *watcher) close() {
	unix.Close(w.fd)
	unix.Close(w.wake[0])
	unix.Close(w.wake[1])
}

// errInterrupted ends a read after interrupt.
var errInterrupted = errors.New("watch interrupted")

// read waits for inotify events and returns them as watch events.
func (w *watcher) read() ([]*agentv1.FsWatchEvent, error) {
	for {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake[0]), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, err
		}
		if fds[1].Revents != 0 {
			return nil, errInterrupted
		}
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return w.decode(w.buf[:n]), nil
	}
}

// decode turns raw inotify records into watch events.
func (w *watcher) decode(b []byte) []*agentv1.FsWatchEvent {
	var out []*agentv1.FsWatchEvent
	for len(b) >= unix.SizeofInotifyEvent {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(b) {
			break
		}
		name := string(trimNUL(b[unix.SizeofInotifyEvent:end]))
		b = b[end:]
		if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
			out = append(out, &agentv1.FsWatchEvent{Type: "overflow"})
			continue
		}
		dir, ok := w.dirs[raw.Wd]
		if !ok {
			continue
		}
		if raw.Mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, raw.Wd)
			continue
		}
		p := dir
		if name != "" {
			p = filepath.Join(dir, name)
		}
		isDir := raw.Mask&unix.IN_ISDIR != 0
		if isTemp(name) {
			// A write's temporary file is not shown; its rename onto
			// the target is that file's write (below).
			if raw.Mask&unix.IN_MOVED_FROM != 0 && len(w.moved) < 1024 {
				w.moved[raw.Cookie] = p
			}
			continue
		}
		switch m := raw.Mask; {
		case m&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
			if raw.Wd == w.root {
				out = append(out, &agentv1.FsWatchEvent{Type: "remove", Path: dir, IsDir: true})
			}
		case m&unix.IN_CREATE != 0:
			out = append(out, &agentv1.FsWatchEvent{Type: "create", Path: p, IsDir: isDir})
			if isDir && w.recursive {
				_ = w.add(p)
			}
		case m&unix.IN_MODIFY != 0:
			out = append(out, &agentv1.FsWatchEvent{Type: "write", Path: p, IsDir: isDir})
		case m&unix.IN_ATTRIB != 0:
			out = append(out, &agentv1.FsWatchEvent{Type: "chmod", Path: p, IsDir: isDir})
		case m&unix.IN_DELETE != 0:
			out = append(out, &agentv1.FsWatchEvent{Type: "remove", Path: p, IsDir: isDir})
		case m&unix.IN_MOVED_FROM != 0:
			if len(w.moved) < 1024 {
				w.moved[raw.Cookie] = p
			}
			out = append(out, &agentv1.FsWatchEvent{Type: "remove", Path: p, IsDir: isDir, OldPath: movedMarker})
		case m&unix.IN_MOVED_TO != 0:
			old, paired := w.moved[raw.Cookie]
			delete(w.moved, raw.Cookie)
			if paired && isTemp(filepath.Base(old)) {
				out = append(out, &agentv1.FsWatchEvent{Type: "write", Path: p, IsDir: isDir})
			} else if paired {
				out = pairRename(out, old, p, isDir)
			} else {
				out = append(out, &agentv1.FsWatchEvent{Type: "create", Path: p, IsDir: isDir})
			}
			if isDir && w.recursive {
				_ = w.add(p)
			}
		}
	}
	for _, e := range out {
		if e.OldPath == movedMarker { // a move out of the watched tree
			e.OldPath = ""
		}
	}
	return out
}

// isTemp reports whether name is one of atomicFile's temporary files.
func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// movedMarker tags the remove of an IN_MOVED_FROM until its IN_MOVED_TO,
// in the same read, makes it the rename's.
const movedMarker = "\x00moved"

// pairRename turns the pending remove of old into a rename to p, or adds
// the rename when the remove went out in an earlier read.
func pairRename(out []*agentv1.FsWatchEvent, old, p string, isDir bool) []*agentv1.FsWatchEvent {
	for _, e := range out {
		if e.OldPath == movedMarker && e.Path == old {
			e.Type, e.Path, e.OldPath = "rename", p, old
			return out
		}
	}
	return append(out, &agentv1.FsWatchEvent{Type: "rename", Path: p, OldPath: old, IsDir: isDir})
}

// trimNUL cuts an inotify name at its first NUL (names are padded).
func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
