package snapsvc

import (
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// fakeAhead is a runtime's containers created ahead: one id per claim.
type fakeAhead struct {
	claims, drops []string
	runtimes      []string
}

func (f *fakeAhead) ClaimAhead(dir string) string {
	f.claims = append(f.claims, dir)
	return "ahead-id"
}

func (f *fakeAhead) DropAhead(dir string) { f.drops = append(f.drops, dir) }

// TestRestoreAhead: a create from a snapshot takes a container created
// ahead of the snapshot's runtime for its checkpoint directory (its id is
// the sandbox's), unless the sandbox has a network or volumes, which are
// made for it; deleting the snapshot drops its containers.
func TestRestoreAhead(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 10)
	fake := &fakeAhead{}
	s.ahead = func(name string) Ahead {
		fake.runtimes = append(fake.runtimes, name)
		if name == "microvm" {
			return nil
		}
		return fake
	}
	sb := checkpointable(core, "alice", 10)
	alice := as("alice")
	info, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	req := api.CreateRequest{SnapshotID: info.SnapshotID}
	from, err := s.Origin(alice, &req)
	if err != nil {
		t.Fatal(err)
	}
	if from.ID != "ahead-id" || !slices.Equal(fake.claims, []string{s.path(info.SnapshotID)}) || !slices.Equal(fake.runtimes, []string{"gvisor"}) {
		t.Errorf("origin %+v, claims %v of runtimes %v", from, fake.claims, fake.runtimes)
	}
	vols := api.CreateRequest{SnapshotID: info.SnapshotID, Volumes: []api.VolumeMount{{Name: "v", Path: "/v"}}}
	if from, err := s.Origin(alice, &vols); err != nil || from.ID != "" || len(fake.claims) != 1 {
		t.Errorf("a create with volumes: origin %+v, %v, claims %v", from, err, fake.claims)
	}
	if _, err := s.DeleteSnapshot(alice, api.SnapshotRequest{SnapshotID: info.SnapshotID}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fake.drops, []string{s.path(info.SnapshotID)}) {
		t.Errorf("drops %v", fake.drops)
	}

	// A network sandbox's snapshot, and one of a runtime without
	// containers ahead, get none.
	sb.From.Network = true
	netInfo, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	netReq := api.CreateRequest{SnapshotID: netInfo.SnapshotID, Network: true}
	if from, err := s.Origin(alice, &netReq); err != nil || from.ID != "" || len(fake.claims) != 1 {
		t.Errorf("a network snapshot: origin %+v, %v, claims %v", from, err, fake.claims)
	}
	sb.From.Network, sb.From.Runtime = false, "microvm"
	vmInfo, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	vmReq := api.CreateRequest{SnapshotID: vmInfo.SnapshotID}
	if from, err := s.Origin(alice, &vmReq); err != nil || from.ID != "" || len(fake.claims) != 1 {
		t.Errorf("a microvm snapshot: origin %+v, %v, claims %v", from, err, fake.claims)
	}
}
