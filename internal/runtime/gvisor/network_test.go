package gvisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/netsvc"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testNetworkPool is the pool of the tests' network service, apart from
// the default one of daemons running on the same machine.
const testNetworkPool = "10.232.0.0/16"

// testNetwork is a network service over a fresh directory, as the daemon
// builds one; its cleanup tears down whatever the test left.
func testNetwork(t *testing.T) *netsvc.Service {
	t.Helper()
	testutil.RequiresBinary(t, "nft")
	s, err := netsvc.New(netsvc.Options{Dir: t.TempDir(), Pool: testNetworkPool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := s.Reconcile(context.Background(), func(string) bool { return false }); err != nil {
			t.Errorf("cleanup: reconciling networks: %v", err)
		}
	})
	return s
}

// attach gives spec a network of svc whose gateway forwards ports.
func attach(t *testing.T, svc *netsvc.Service, spec *runtime.Spec, ports ...uint16) {
	t.Helper()
	nw, err := svc.Attach(context.Background(), spec.ID, ports, netsvc.Egress{}, false)
	if err != nil {
		t.Fatal(err)
	}
	spec.Network = nw
}

// netRootfs is testRootfs with busybox's network applets.
func netRootfs(t *testing.T) string {
	t.Helper()
	root := testRootfs(t, true)
	for _, a := range []string{"wget", "nc"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	// The mount point of the generated resolv.conf (testRootfs has none,
	// as some images: then the image's is left alone).
	if err := os.WriteFile(filepath.Join(root, "etc", "resolv.conf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestNetworkSandbox(t *testing.T) {
	r := newTestRuntime(t)
	testutil.RequiresBinary(t, "nft")
	rootfs := netRootfs(t)
	allowed, other := testutil.ServeHTTP(t, "127.0.0.1:0", "from the host"), testutil.ServeHTTP(t, "127.0.0.1:0", "other")

	off := startAgent(t, r, testSpec(t, rootfs))
	if got := off.must("read /proc/net/dev"); strings.Contains(got, "eth0") || !strings.Contains(got, "lo:") {
		t.Errorf("/proc/net/dev without network: %q", got)
	}

	svc := testNetwork(t)
	spec := testSpec(t, rootfs)
	attach(t, svc, &spec, allowed)
	on := startAgent(t, r, spec)
	gw := spec.Network.Gateway
	// busybox's static wget crashes under gVisor (NSS); nc speaks HTTP/1.0.
	fetch := func(port uint16) string {
		return fmt.Sprintf(`sh -c "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 %s %d || echo unreachable"`, gw, port)
	}
	for _, tc := range []struct{ name, cmd, want string }{
		{"eth0 is there", "cat /proc/net/dev", "eth0"},
		{"resolv.conf is generated", "cat /etc/resolv.conf", "written by hutch"},
		{"forwarded port", fetch(allowed), "from the host"},
		{"other port closed", fetch(other), "unreachable"},
	} {
		if got := on.must("run " + tc.cmd); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q gave %q, want %q in it", tc.name, tc.cmd, got, tc.want)
		}
	}
	if traces := testutil.NetworkTraces(spec.ID); len(traces) == 0 {
		t.Error("no veth or rule names the running network sandbox")
	}
	if err := on.inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Detach(context.Background(), spec.ID); err != nil {
		t.Fatal(err)
	}
	if traces := testutil.NetworkTraces(spec.ID); len(traces) > 0 {
		t.Errorf("network of a destroyed sandbox left: %v", traces)
	}
}
