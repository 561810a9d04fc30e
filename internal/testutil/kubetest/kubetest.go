// Package kubetest runs a real Kubernetes control plane (internal/kubecp)
// for tests (issue 35: 5): started on loopback, or on an address nodes in
// other network namespaces reach, and stopped when the test ends.
package kubetest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/kubecp"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// NodeMonitorGrace is the controller-manager's --node-monitor-grace-period.
const NodeMonitorGrace = kubecp.NodeMonitorGrace

// Versions are the Kubernetes and etcd versions pinned in deps/kube/go.mod
// and deps/kube/etcd/go.mod, read as the Makefile reads them.
func Versions() (kube, etcd string, err error) {
	root := filepath.Join(testutil.RepoRoot(), "deps", "kube")
	if kube, err = pinned(filepath.Join(root, "go.mod"), "k8s.io/kubernetes"); err != nil {
		return "", "", err
	}
	if etcd, err = pinned(filepath.Join(root, "etcd", "go.mod"), "go.etcd.io/etcd/server/v3"); err != nil {
		return "", "", err
	}
	return kube, etcd, nil
}

// pinned is the version go.mod file requires of module: the word after
// the module's path on the line that starts with it.
func pinned(file, module string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return pinnedIn(string(b), file, module)
}

// pinnedIn is pinned on file's text.
func pinnedIn(text, file, module string) (string, error) {
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s requires no version of %s", file, module)
}

// RequiresControlPlane skips t (or fails it when integration is required)
// unless it may start a control plane: not -short, and the binaries built
// by `make kube-deps`. It returns their directory.
func RequiresControlPlane(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		testutil.Skip(t, "control-plane test skipped in -short mode")
	}
	return requireBuilt(t, "the control plane's binaries", kubecp.BinDir, kubecp.Built)
}

// requireBuilt skips t (or fails it when integration is required) unless
// find's directory holds what built checks; it returns the directory.
func requireBuilt(t testing.TB, what string, find func() (string, error), built func(string) error) string {
	t.Helper()
	dir, err := find()
	if err != nil {
		testutil.Skip(t, "finding "+what+": "+err.Error())
	}
	if err := built(dir); err != nil {
		testutil.Skip(t, err.Error())
	}
	return dir
}

// ControlPlane is a control plane started for a test.
type ControlPlane struct {
	*kubecp.ControlPlane
	t testing.TB
}

// ServingCert issues a serving certificate of the cluster's CA for name
// (a node's kubelet API) with ips, and returns its files.
func (cp *ControlPlane) ServingCert(name string, ips ...net.IP) (certFile, keyFile string) {
	cp.t.Helper()
	cert, key, err := cp.ControlPlane.ServingCert(name, ips...)
	if err != nil {
		cp.t.Fatal(err)
	}
	return cert, key
}

// Start starts a control plane on loopback (kubecp.Start) and stops it
// when t ends; the components' logs are in t's output when t fails.
func Start(t testing.TB) *ControlPlane { return StartAt(t, nil) }

// StartAt is Start with the apiserver on address (loopback when nil).
func StartAt(t testing.TB, address net.IP) *ControlPlane {
	t.Helper()
	bin := RequiresControlPlane(t)
	cp, err := kubecp.Start(kubecp.Options{BinDir: bin, Dir: t.TempDir(), Address: address})
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(cp.Stop)
	// Cleanups run in reverse: the logs are read before the stop.
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.LogTails(30))
		}
	})
	return &ControlPlane{ControlPlane: cp, t: t}
}
