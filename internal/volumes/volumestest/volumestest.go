// Package volumestest has a stand-in for the volumes' file systems, so
// that the volume store and the manager's volumes are tested without root:
// a disk is a plain file and a mount only a note of it.
package volumestest

import (
	"errors"
	"os"
	"sync"
)

// Disks implements volumes.Disks with plain files; it counts what is
// mounted so tests can see leaks.
type Disks struct {
	mu      sync.Mutex
	mounted map[string]string // dir → file
	// Broken is what Check answers; MakeErr what Make does.
	Broken  error
	MakeErr error
}

// New returns Disks with nothing mounted.
func New() *Disks { return &Disks{mounted: map[string]string{}} }

// Check answers Broken.
func (f *Disks) Check() error { return f.Broken }

// Make writes a small file, or fails with MakeErr.
func (f *Disks) Make(file string, _ uint64) error {
	if f.MakeErr != nil {
		return f.MakeErr
	}
	return os.WriteFile(file, []byte("fs"), 0o600)
}

// Mount notes dir as mounted.
func (f *Disks) Mount(file, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := os.Stat(file); err != nil {
		return err
	}
	f.mounted[dir] = file
	return nil
}

// Unmount forgets dir.
func (f *Disks) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mounted, dir)
	return nil
}

// Usage answers 4 KiB used and 1 MiB available for a mounted dir.
func (f *Disks) Usage(dir string) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mounted[dir]; !ok {
		return 0, 0, errors.New("not mounted")
	}
	return 4096, 1 << 20, nil
}

// Mounts counts what is mounted.
func (f *Disks) Mounts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mounted)
}
