package netplumb

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// newNetns creates an empty network namespace and pins it by bind-mounting
// it on path, a file it creates. On error nothing is left.
func newNetns(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("creating network namespace mount point: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// The thread that unshares stays in the new namespace. It is
		// never unlocked, so the Go runtime ends it with this goroutine
		// instead of running other goroutines on it.
		goruntime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("creating network namespace: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("pinning network namespace at %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// RemoveNetns unpins the network namespace at path and removes the file;
// the namespace goes once nothing else holds it. A missing path is not an
// error. The network service calls it for a namespace it pinned whose lease a
// crashed daemon lost (Teardown leaves that one alone).
func RemoveNetns(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing network namespace mount point: %w", err)
	}
	return nil
}
