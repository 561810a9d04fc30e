package netsvc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// testPool is the pool of these tests, apart from the default one of
// daemons running on the same machine.
const testPool = "10.234.0.0/16"

// tableExists reports whether nftables has table inet name.
func tableExists(name string) bool {
	return exec.Command("nft", "list", "table", "inet", name).Run() == nil
}

// TestAttachDetach: an attachment is a pinned namespace, a resolv.conf
// naming the gateway and the addresses of a subnet of the pool; two
// sandboxes share the service's one table; Detach leaves nothing, and the
// last one removes the table.
func TestAttachDetach(t *testing.T) {
	testutil.RequiresRoot(t)
	testutil.RequiresBinary(t, "nft")
	ctx := context.Background()
	s, err := New(Options{Dir: t.TempDir(), Pool: testPool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Reconcile(context.Background(), func(string) bool { return false }) })
	ids := []string{"netsvc-test-a", "netsvc-test-b"}
	for _, id := range ids {
		nw, err := s.Attach(ctx, id, []uint16{8080}, Egress{}, false)
		if err != nil {
			t.Fatalf("Attach %s: %v", id, err)
		}
		if _, err := os.Stat(nw.NetnsPath); err != nil {
			t.Errorf("%s: namespace %s: %v", id, nw.NetnsPath, err)
		}
		if b, err := os.ReadFile(nw.ResolvConf); err != nil || !strings.Contains(string(b), "nameserver "+nw.Gateway.String()) {
			t.Errorf("%s: resolv.conf %q (%v), want the gateway %s as nameserver", id, b, err, nw.Gateway)
		}
		if !nw.Addr.IsValid() || nw.Addr == nw.Gateway || nw.Nameserver != nw.Gateway || nw.Bits != 30 {
			t.Errorf("%s: attachment %+v", id, nw)
		}
		if got := s.Attachment(id); got != nw {
			t.Errorf("%s: Attachment = %+v, want %+v", id, got, nw)
		}
		if len(testutil.NetworkTraces(id)) == 0 {
			t.Errorf("%s: no veth or rule names the attached sandbox", id)
		}
	}
	if !tableExists(s.Table()) {
		t.Fatalf("no table %s", s.Table())
	}
	for i, id := range ids {
		if err := s.Detach(ctx, id); err != nil {
			t.Fatalf("Detach %s: %v", id, err)
		}
		if got, want := tableExists(s.Table()), i < len(ids)-1; got != want {
			t.Errorf("after detaching %d of %d sandboxes: table %s there = %v, want %v", i+1, len(ids), s.Table(), got, want)
		}
		if tr := testutil.NetworkTraces(id); len(tr) > 0 {
			t.Errorf("%s: left after Detach: %v", id, tr)
		}
		if s.Attachment(id) != nil {
			t.Errorf("%s: still has an attachment", id)
		}
		if _, err := os.Stat(s.sandboxDir(id)); !os.IsNotExist(err) {
			t.Errorf("%s: directory left (%v)", id, err)
		}
	}
}

// TestReconcileAfterCrash: a new service on the same directory (a
// restarted daemon, or its crash watchdog) tears down the network of a
// sandbox the first one left, by id, and then its firewall table.
func TestReconcileAfterCrash(t *testing.T) {
	testutil.RequiresRoot(t)
	testutil.RequiresBinary(t, "nft")
	ctx := context.Background()
	dir := t.TempDir()
	first, err := New(Options{Dir: dir, Pool: testPool})
	if err != nil {
		t.Fatal(err)
	}
	const id, kept = "netsvc-test-crash", "netsvc-test-kept"
	for _, i := range []string{id, kept} {
		if _, err := first.Attach(ctx, i, nil, Egress{Restricted: true}, false); err != nil {
			t.Fatal(err)
		}
	}
	// The first service is abandoned, as by kill -9 of its daemon.
	second, err := New(Options{Dir: dir, Pool: testPool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = second.Reconcile(context.Background(), func(string) bool { return false }) })
	if second.Table() != first.Table() {
		t.Fatalf("table %s, the first service's is %s", second.Table(), first.Table())
	}
	got, err := second.Reconcile(ctx, func(i string) bool { return i == kept })
	if err != nil || len(got) != 1 || got[0] != id {
		t.Fatalf("Reconcile = %v, %v; want [%s]", got, err, id)
	}
	if tr := testutil.NetworkTraces(id); len(tr) > 0 {
		t.Errorf("network left after Reconcile: %v", tr)
	}
	if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
		t.Errorf("directory of %s left (%v)", id, err)
	}
	if len(testutil.NetworkTraces(kept)) == 0 || !tableExists(second.Table()) {
		t.Error("Reconcile removed the network of a sandbox it was told to keep")
	}
	got, err = second.Reconcile(ctx, func(string) bool { return false })
	if err != nil || len(got) != 1 || got[0] != kept {
		t.Fatalf("Reconcile = %v, %v; want [%s]", got, err, kept)
	}
	if tableExists(second.Table()) {
		t.Errorf("table %s left with no sandbox", second.Table())
	}
}
