package vmspec

import "testing"

func TestParams(t *testing.T) {
	tests := []struct {
		cmdline  string
		inVM     bool
		host     string
		writable uint64
		pids     uint64
	}{
		{cmdline: "", inVM: false},
		{cmdline: "console=ttyS0 quiet", inVM: false},
		{cmdline: "console=ttyS0 hutch.vm=1 hutch.hostname=box hutch.writable_mb=64 hutch.pids_max=99\n", inVM: true, host: "box", writable: 64, pids: 99},
		{cmdline: "hutch.vm=0 hutch.writable_mb=x", inVM: false},
		{cmdline: "hutch.vm", inVM: false},
	}
	for _, tt := range tests {
		p := Params(tt.cmdline)
		if got := InVM(tt.cmdline); got != tt.inVM {
			t.Errorf("InVM(%q) = %v, want %v", tt.cmdline, got, tt.inVM)
		}
		if p[KeyHostname] != tt.host || WritableMB(p) != tt.writable || PidsMax(p) != tt.pids {
			t.Errorf("Params(%q): hostname %q, writable %d, pids %d; want %q, %d, %d", tt.cmdline, p[KeyHostname], WritableMB(p), PidsMax(p), tt.host, tt.writable, tt.pids)
		}
	}
}
