package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/config"
)

// TestStoppedSandboxKeepsOnlyItsRecord checks that a stopped sandbox, kept
// for stopped_retention_secs, holds no agent session (nor the buffers a
// sandbox may have filled it with) once its teardown is over.
func TestStoppedSandboxKeepsOnlyItsRecord(t *testing.T) {
	m, _ := testManager(t, config.Default())
	const id = "00000000-0000-4000-8000-000000000001"
	sb := addSandbox(t, m, id, 300, time.Now(), 0)
	host, _ := agenttest.Pipe(t)
	ac, err := agentclient.Dial(host, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb.agent = ac // before anyone else sees sb
	ctx := context.Background()
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	kept := m.sandboxes[id]
	m.mu.Unlock()
	if kept == nil {
		t.Fatal("the stopped sandbox was forgotten before its retention")
	}
	if kept.agent != nil || kept.inst != nil || kept.image != nil {
		t.Errorf("the stopped sandbox keeps agent=%v instance=%v image=%v; want none",
			kept.agent != nil, kept.inst != nil, kept.image != nil)
	}
	info, err := m.Get(ctx, api.GetRequest{SandboxID: id})
	if err != nil || !info.Stopped || info.StopReason != endRequest.Detail || info.StopCause != "request" {
		t.Errorf("Get = %+v, %v; want stopped %q", info, err, endRequest)
	}
}
