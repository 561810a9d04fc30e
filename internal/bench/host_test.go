package bench

import "testing"

func TestCPUModel(t *testing.T) {
	tests := []struct {
		name, cpuinfo, want string
	}{
		{
			name:    "x86",
			cpuinfo: "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n",
			want:    "AMD EPYC 7B13",
		},
		{
			name:    "arm without model name",
			cpuinfo: "processor\t: 0\nBogoMIPS\t: 48.00\nCPU part\t: 0xd0c\n\nHardware\t: BCM2835\n",
			want:    "BCM2835",
		},
		{
			name:    "model name wins over an earlier fallback",
			cpuinfo: "Processor\t: ARMv7\nmodel name\t: ARMv7 Processor rev 4 (v7l)\n",
			want:    "ARMv7 Processor rev 4 (v7l)",
		},
		{name: "empty model name is skipped", cpuinfo: "model name\t:\nmodel name\t: Real\n", want: "Real"},
		{name: "nothing known", cpuinfo: "processor\t: 0\n", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cpuModel(tt.cpuinfo); got != tt.want {
				t.Errorf("cpuModel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunscVersionWithoutBinary(t *testing.T) {
	for _, path := range []string{"", t.TempDir(), t.TempDir() + "/missing"} {
		if got := runscVersion(t.Context(), path); got != "" {
			t.Errorf("runscVersion(%q) = %q, want empty", path, got)
		}
	}
}
