package agent

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// A fork runs with the capability dropped from its thread's effective set,
// and the thread has it back after. The agent drops CAP_SYS_RESOURCE,
// which a test host may not grant root; CAP_CHOWN behaves the same.
func TestForkCapsDropOneCapabilityForTheForkOnly(t *testing.T) {
	testutil.RequiresRoot(t)
	// Locked, so that every capget below reads the thread the fork uses.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const bit = 1 << unix.CAP_CHOWN
	var before, during, after [2]unix.CapUserData
	if err := capget(&before); err != nil {
		t.Fatal(err)
	}
	c := dropping(unix.CAP_CHOWN)
	if c == nil {
		t.Fatalf("root without CAP_CHOWN: %+v", before)
	}
	pid, err := c.run(func() (int, error) { return 7, capget(&during) })
	if err != nil || pid != 7 {
		t.Fatalf("run: %d, %v", pid, err)
	}
	if err := capget(&after); err != nil {
		t.Fatal(err)
	}
	if during[0].Effective != before[0].Effective&^bit || during[0].Inheritable != before[0].Inheritable&^bit || during[0].Permitted != before[0].Permitted {
		t.Errorf("the fork's sets %+v are not the thread's %+v less CAP_CHOWN", during[0], before[0])
	}
	want := before
	want[0].Inheritable &^= bit
	if after != want {
		t.Errorf("the thread's sets after the fork are %+v, not %+v (its own less an inheritable CAP_CHOWN)", after, want)
	}
}

// The agent's capability is outside the bounding set, so once dropped it
// cannot be made inheritable again: the fork's thread must still get its
// effective set back (or it stays locked and ends with its goroutine).
func TestForkCapsRestoreOutsideTheBoundingSet(t *testing.T) {
	testutil.RequiresRoot(t)
	// The bounding set belongs to a thread: this one is changed for good and
	// ends with the test's goroutine, never unlocked.
	runtime.LockOSThread()
	const bit = 1 << unix.CAP_CHOWN
	var sets [2]unix.CapUserData
	if err := capget(&sets); err != nil {
		t.Fatal(err)
	}
	sets[0].Inheritable |= bit
	if err := capset(&sets); err != nil {
		testutil.Skip(t, "making CAP_CHOWN inheritable: "+err.Error())
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_CHOWN, 0, 0, 0); err != nil {
		testutil.Skip(t, "dropping CAP_CHOWN from the bounding set: "+err.Error())
	}
	c := dropping(unix.CAP_CHOWN)
	if c == nil {
		t.Fatal("CAP_CHOWN is not effective")
	}
	if _, err := c.run(func() (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	var after [2]unix.CapUserData
	if err := capget(&after); err != nil {
		t.Fatal(err)
	}
	if after[0].Effective&bit == 0 || after[0].Inheritable&bit != 0 {
		t.Errorf("after the fork the thread's sets are %+v: want CAP_CHOWN effective again, not inheritable", after[0])
	}
}

func TestForkCapsOfACapabilityNotHeldForkPlainly(t *testing.T) {
	var held [2]unix.CapUserData
	if err := capget(&held); err != nil {
		t.Fatal(err)
	}
	missing := -1
	for n := range 64 {
		if held[n/32].Effective&(1<<(n%32)) == 0 {
			missing = n
			break
		}
	}
	if missing < 0 {
		t.Fatal("every capability is held: nothing to test")
	}
	if c := dropping(uint(missing)); c != nil {
		t.Fatalf("dropping capability %d, not held: %+v", missing, c)
	}
	var nilCaps *forkCaps
	if pid, err := nilCaps.run(func() (int, error) { return 9, nil }); pid != 9 || err != nil {
		t.Fatalf("a nil forkCaps ran the fork as %d, %v", pid, err)
	}
}
