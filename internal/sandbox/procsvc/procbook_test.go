package procsvc

import (
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// TestDescribeEnd: a process's end carries its exit code and whether the
// OOM killer ended it.
func TestDescribeEnd(t *testing.T) {
	cases := []struct {
		name     string
		exited   *agentv1.Exited
		wantCode int // -1: none
		wantOOM  bool
	}{
		{"running", nil, -1, false},
		{"exited", &agentv1.Exited{ExitCode: 3}, 3, false},
		{"killed", &agentv1.Exited{ExitCode: 137, Signal: 9}, 137, false},
		{"out of memory", &agentv1.Exited{ExitCode: 137, Signal: 9, OomKilled: true}, 137, true},
		{"timed out", &agentv1.Exited{ExitCode: -1, TimedOut: true}, -1, false},
	}
	var b procBook
	for _, tc := range cases {
		info := b.describe(&agentv1.ProcessInfo{Pid: 7, Exited: tc.exited})
		code := -1
		if info.ExitCode != nil {
			code = *info.ExitCode
		}
		if code != tc.wantCode || info.OOMKilled != tc.wantOOM {
			t.Errorf("%s: exit code %d, oom_killed %v; want %d, %v", tc.name, code, info.OOMKilled, tc.wantCode, tc.wantOOM)
		}
	}
}
