package microvm

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kvmAPIVersion is the only KVM API version there has ever been.
const kvmAPIVersion = 12

// kvmGetAPIVersion is the KVM_GET_API_VERSION ioctl, _IO(0xAE, 0).
const kvmGetAPIVersion = 0xAE00

// chooseAccel resolves runtimes.microvm.accel to "kvm" or "tcg". With
// auto it is kvm when kvmUsable says so; why says why, for the daemon's
// log.
func chooseAccel(setting string, kvmUsable func() error) (accel, why string, err error) {
	switch setting {
	case AccelTCG:
		return AccelTCG, "configured", nil
	case AccelKVM:
		if err := kvmUsable(); err != nil {
			return "", "", fmt.Errorf("runtimes.microvm.accel is kvm but KVM is not usable here: %w", err)
		}
		return AccelKVM, "configured", nil
	default:
		if err := kvmUsable(); err != nil {
			return AccelTCG, "KVM not usable: " + err.Error(), nil
		}
		return AccelKVM, "hardware virtualization", nil
	}
}

// kvmUsable says why hardware KVM cannot run VMs here, or nil. /dev/kvm
// must open and speak the KVM API, and the CPU must have hardware
// virtualization (vmx or svm): some hosts offer a /dev/kvm backed by a
// software hypervisor (PVM), on which stock kernels crawl.
func kvmUsable() error {
	fd, err := unix.Open("/dev/kvm", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening /dev/kvm: %w", err)
	}
	defer unix.Close(fd)
	v, err := unix.IoctlRetInt(fd, kvmGetAPIVersion)
	if err != nil {
		return fmt.Errorf("/dev/kvm: KVM_GET_API_VERSION: %w", err)
	}
	if v != kvmAPIVersion {
		return fmt.Errorf("/dev/kvm speaks KVM API %d, not %d", v, kvmAPIVersion)
	}
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return err
	}
	if !hasHardwareVirt(string(cpuinfo)) {
		return fmt.Errorf("/dev/kvm is there but the CPU has no vmx or svm flag (a software hypervisor)")
	}
	return nil
}

// hasHardwareVirt reports whether a /proc/cpuinfo lists vmx or svm.
func hasHardwareVirt(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, f := range strings.Fields(v) {
			if f == "vmx" || f == "svm" {
				return true
			}
		}
	}
	return false
}

// hostTSCkHz is the host's TSC frequency in kHz, from the first "cpu MHz"
// of a /proc/cpuinfo (the nominal frequency on CPUs with a constant TSC),
// or 0 if it has none.
func hostTSCkHz(cpuinfo string) uint64 {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "cpu MHz" {
			continue
		}
		mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || mhz <= 0 {
			return 0
		}
		return uint64(mhz * 1000)
	}
	return 0
}
