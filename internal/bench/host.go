package bench

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Host describes the machine the benchmark ran on (the client's; the
// daemon is normally on the same one).
type Host struct {
	CPUs     int    `json:"cpus"`
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	// Load and LoadEnd are the 1-minute load average when the run started
	// and when it ended: a busy machine makes every number worse.
	Load    string `json:"load_avg_1m,omitempty"`
	LoadEnd string `json:"load_avg_1m_end,omitempty"`
	// Runsc is the first line of `runsc --version`, with the gVisor
	// module version runsc was built from when its build info says, when
	// runsc was found.
	Runsc string `json:"runsc_version,omitempty"`
}

// LocalHost describes this machine; runscPath, when it names a binary,
// is asked for its version. Facts that cannot be read are left empty.
func LocalHost(ctx context.Context, runscPath string) Host {
	h := Host{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	h.Load = loadAvg1m()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = cpuModel(string(b))
	}
	h.Runsc = runscVersion(ctx, runscPath)
	return h
}

// loadAvg1m returns the host's 1-minute load average, "" when unknown.
func loadAvg1m() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	return f
}

// runscVersion describes the runsc binary at path, or returns "" when
// there is none. A runsc built with `go build` says "VERSION_MISSING", so
// the gVisor module version from its build info is added.
func runscVersion(ctx context.Context, path string) string {
	if path == "" {
		return ""
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if bi, err := buildinfo.ReadFile(path); err == nil && bi.Main.Path != "" && bi.Main.Version != "" {
		v += " (" + bi.Main.Path + " " + bi.Main.Version + ")"
	}
	return v
}

// cpuModel returns the first "model name" of /proc/cpuinfo text (x86), or
// else its first "Hardware" or "Processor" line (some ARM kernels).
func cpuModel(cpuinfo string) string {
	var fallback string
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case value == "":
		case key == "model name":
			return value
		case fallback == "" && (key == "Hardware" || key == "Processor"):
			fallback = value
		}
	}
	return fallback
}
