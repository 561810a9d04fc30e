package microvm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// guestKernel is the kernel a VM boots and the modules its init loads.
type guestKernel struct {
	// path is the vmlinuz file.
	path string
	// version is its release ("6.1.0-56-cloud-amd64"): its modules are
	// in /lib/modules/<version>.
	version string
	// modules are the module files the init loads, in order (built-in
	// ones are left out).
	modules []string
}

// guestModules are the modules the guest init needs, in load order (each
// after those it depends on), as paths under /lib/modules/<version>
// without the ".ko" suffix: the virtio transport of QEMU's microvm
// machine (MMIO), the agent's serial port, the image's disk, and overlayfs
// for the writable layer, the balloon (free page reporting), the network
// interface. ext4 is built into Debian's cloud kernel.
var guestModules = []string{
	"kernel/drivers/virtio/virtio_ring",
	"kernel/drivers/virtio/virtio",
	"kernel/drivers/virtio/virtio_mmio",
	"kernel/drivers/char/virtio_console",
	"kernel/drivers/block/virtio_blk",
	"kernel/fs/overlayfs/overlay",
	"kernel/drivers/virtio/virtio_balloon",
	"kernel/net/core/failover",
	"kernel/drivers/net/net_failover",
	"kernel/drivers/net/virtio_net",
}

// moduleSuffixes are the forms a module file may take; the compressed
// ones need a kernel that decompresses modules itself.
var moduleSuffixes = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

// findKernel resolves the guest kernel: explicit (a vmlinuz-<version>
// path) if given, else the newest Debian cloud kernel in bootDir; and its
// modules under modulesRoot (/lib/modules).
func findKernel(explicit, bootDir, modulesRoot string) (guestKernel, error) {
	path := explicit
	if path == "" {
		found, err := filepath.Glob(filepath.Join(bootDir, "vmlinuz-*-cloud-amd64"))
		if err != nil || len(found) == 0 {
			return guestKernel{}, fmt.Errorf("no Debian cloud kernel in %s (install linux-image-cloud-amd64: make deps-microvm), and runtimes.microvm.kernel is not set", bootDir)
		}
		sort.Slice(found, func(i, j int) bool { return versionLess(found[i], found[j]) })
		path = found[len(found)-1]
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return guestKernel{}, fmt.Errorf("guest kernel %s is not a file", path)
	}
	version, ok := strings.CutPrefix(filepath.Base(path), "vmlinuz-")
	if !ok || version == "" {
		return guestKernel{}, fmt.Errorf("guest kernel %s is not named vmlinuz-<version>", path)
	}
	mods, err := findModules(filepath.Join(modulesRoot, version))
	if err != nil {
		return guestKernel{}, fmt.Errorf("guest kernel %s: %w", version, err)
	}
	return guestKernel{path: path, version: version, modules: mods}, nil
}

// findModules finds the files of guestModules in modDir, leaving out the
// ones modules.builtin lists.
func findModules(modDir string) ([]string, error) {
	builtin, err := builtinModules(filepath.Join(modDir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range guestModules {
		if builtin[m+".ko"] {
			continue
		}
		found := ""
		for _, suf := range moduleSuffixes {
			if fi, err := os.Stat(filepath.Join(modDir, m+suf)); err == nil && fi.Mode().IsRegular() {
				found = filepath.Join(modDir, m+suf)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("module %s is neither in %s nor built in", filepath.Base(m), modDir)
		}
		out = append(out, found)
	}
	return out, nil
}

// builtinModules reads modules.builtin: the modules built into the
// kernel, as paths ending in ".ko". A missing file lists none.
func builtinModules(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out[strings.TrimSpace(sc.Text())] = true
	}
	return out, sc.Err()
}

// versionLess orders kernel file names by version: runs of digits compare
// as numbers ("6.1.0-10" < "6.1.0-9" is false).
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		switch {
		case da > 0 && db > 0:
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
