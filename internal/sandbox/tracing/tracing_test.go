package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

type observer struct{ got []string }

func (o *observer) CreateDone(r string, _ time.Duration) { o.got = append(o.got, "create:"+r) }
func (o *observer) ExecDone(r string, _ time.Duration)   { o.got = append(o.got, "exec:"+r) }
func (o *observer) Stopped(c string)                     { o.got = append(o.got, "stopped:"+c) }

// TestExecMeasuresAndRecords: an exec that ran, or timed out, is measured
// and records exec.finished for its owner; one that failed otherwise is
// measured by its S-code and records nothing. A nil Observer or emit is
// fine.
func TestExecMeasuresAndRecords(t *testing.T) {
	code := 3
	tests := []struct {
		name   string
		err    error
		result string
		events int
	}{
		{"ran", nil, "exec:ok", 1},
		{"timeout", errdefs.New(errdefs.CodeExecTimeout, "timed out"), "exec:S200", 1},
		{"busy", errdefs.New(errdefs.CodeExecBusy, "busy"), "exec:S003", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &observer{}
			var events []string
			emit := func(typ, owner, id string, data any) { events = append(events, typ+" "+owner+" "+id) }
			_, done := Exec(auth.WithOwner(context.Background(), "alice"), obs, emit, api.ExecRequest{SandboxID: "sb1"})
			done(api.ExecResponse{ExitCode: &code}, tt.err)
			if len(obs.got) != 1 || obs.got[0] != tt.result {
				t.Errorf("observer got %v, want %s", obs.got, tt.result)
			}
			if len(events) != tt.events || (tt.events == 1 && events[0] != api.EventExecFinished+" alice sb1") {
				t.Errorf("events %v, want %d exec.finished", events, tt.events)
			}
		})
	}
	_, done := Exec(context.Background(), nil, nil, api.ExecRequest{})
	done(api.ExecResponse{}, nil)
	Or(nil).Stopped("request")
}
