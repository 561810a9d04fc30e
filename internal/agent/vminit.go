package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// This file holds the parts of the microVM init (vminit_linux.go) that
// read the guest's sysfs and initramfs: plain file reading, tested with
// fake trees.

// moduleFile is a kernel module the VM init loads.
type moduleFile struct {
	path string
	// compressed modules (.ko.xz, .ko.zst, .ko.gz) are decompressed by the
	// kernel (finit_module's MODULE_INIT_COMPRESSED_FILE).
	compressed bool
}

// moduleFiles lists the modules in dir in the order of their names (the
// host writes them with a two-digit position in front).
func moduleFiles(dir string) ([]moduleFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing kernel modules: %w", err)
	}
	var mods []moduleFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".ko"):
			mods = append(mods, moduleFile{path: filepath.Join(dir, name)})
		case strings.HasSuffix(name, ".ko.xz"), strings.HasSuffix(name, ".ko.zst"), strings.HasSuffix(name, ".ko.gz"):
			mods = append(mods, moduleFile{path: filepath.Join(dir, name), compressed: true})
		}
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].path < mods[j].path })
	return mods, nil
}

// findPort returns the device name ("vport0p1") of the virtio-serial port
// called name, from the ports directory of sysfs (/sys/class/virtio-ports),
// or "" if none is there yet.
func findPort(portsDir, name string) (string, error) {
	entries, err := os.ReadDir(portsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(portsDir, e.Name(), "name"))
		if err == nil && strings.TrimSpace(string(b)) == name {
			return e.Name(), nil
		}
	}
	return "", nil
}

// findDisk returns the device name ("vda") of the block device whose
// serial is serial, from sysfs's block directory (/sys/block), or "" if
// none is there yet.
func findDisk(blockDir, serial string) (string, error) {
	entries, err := os.ReadDir(blockDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(blockDir, e.Name(), "serial"))
		if err == nil && strings.TrimSpace(string(b)) == serial {
			return e.Name(), nil
		}
	}
	return "", nil
}

// waitFor calls find every few milliseconds until it names something, it
// fails, or timeout passes. Devices show up in sysfs a moment after their
// driver is loaded.
func waitFor(what string, timeout time.Duration, find func() (string, error)) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		name, err := find()
		if err != nil {
			return "", fmt.Errorf("looking for %s: %w", what, err)
		}
		if name != "" {
			return name, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no %s after %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// findNetIf returns the first network interface but lo in sysfs's net
// directory (/sys/class/net), or "" if none is there yet.
func findNetIf(netDir string) (string, error) {
	entries, err := os.ReadDir(netDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	for _, e := range entries {
		if e.Name() != "lo" {
			return e.Name(), nil
		}
	}
	return "", nil
}

// trustEgressCA appends the egress CA the host put in the initramfs at
// caFile (issue 37), if any, to the image's CA bundle under root
// (vmspec.TrustedBundle) when that is a regular file, in the sandbox's
// writable layer (the image's disk is not changed). An image without such
// a bundle is left alone: its TLS to the hosts of transforms fails rather
// than trusting anything else.
func trustEgressCA(caFile, root string) error {
	ca, err := os.ReadFile(caFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	bundle := filepath.Join(root, vmspec.TrustedBundle)
	if fi, err := os.Lstat(bundle); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	base, err := os.ReadFile(bundle)
	if err != nil {
		return err
	}
	return os.WriteFile(bundle, append(append(bytes.TrimRight(base, "\n"), '\n'), ca...), 0o644)
}
