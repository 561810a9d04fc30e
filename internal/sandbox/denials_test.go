package sandbox

import (
	"context"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// TestDeniedNamesAreRecorded: a sandbox's refused names are egress.denied
// events of the sandbox and its owner, coalesced (events.Denials).
func TestDeniedNamesAreRecorded(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	sb, err := m.lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		m.deniedName(sb, "blocked.test")
	}
	m.deniedNames.d.Flush()
	list := logged(t, m, id, api.EventEgressDenied)
	if len(list) != 2 || string(list[0].Data) != `{"count":1,"name":"blocked.test"}` || string(list[1].Data) != `{"count":99,"name":"blocked.test"}` || list[0].Owner != sb.rec.Owner {
		t.Errorf("events %+v", list)
	}
}
