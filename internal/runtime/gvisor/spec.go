package gvisor

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/runtime"
)

const (
	// defaultPath is the agent's PATH; the agent sets up its children's.
	defaultPath = "PATH=" + runtime.DefaultPath
	// cpuPeriod is the CFS period the CPU quota is expressed in (100 ms).
	cpuPeriod = 100000
)

// defaultCaps is the capability set of the processes the agent starts:
// Docker's default set. The agent needs setuid/setgid, kill, chown,
// dac_override and fowner to run commands as other users and manage their
// files.
var defaultCaps = []string{
	"CAP_AUDIT_WRITE",
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_MKNOD",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_RAW",
	"CAP_SETFCAP",
	"CAP_SETGID",
	"CAP_SETPCAP",
	"CAP_SETUID",
	"CAP_SYS_CHROOT",
}

// agentOnlyCaps are held by the agent and by nothing it starts:
// CAP_SYS_RESOURCE exempts its threads from RLIMIT_NPROC, so that a fork
// bomb cannot stop the Go runtime from creating one (package agent,
// caps.go), and refuses the sandbox's processes ptrace access to it.
var agentOnlyCaps = []string{"CAP_SYS_RESOURCE"}

// cgroupRel is the cgroup, relative to each hierarchy's root, that runsc
// creates for sandbox id.
func cgroupRel(id string) string { return "hutch/" + id }

// ociSpec builds the OCI runtime config (config.json) of a sandbox whose
// bundle holds the image at "rootfs". The root is writable only through
// runsc's overlay, whose upper layer is bounded (see overlayFlag).
func ociSpec(spec runtime.Spec) *specs.Spec {
	hostname := spec.Hostname
	if hostname == "" {
		hostname = spec.ID
		if len(hostname) > 12 {
			hostname = hostname[:12]
		}
	}
	caps := append([]string(nil), defaultCaps...)
	// The agent alone also holds agentOnlyCaps: outside the bounding set
	// and in the inheritable one, which the agent empties for every
	// process it starts, so that their execve gives them nothing beyond
	// the bounding set (root's permitted set is their union).
	agentCaps := append(append([]string(nil), defaultCaps...), agentOnlyCaps...)
	var annotations map[string]string
	if tar := layerTar(spec); tar != "" {
		annotations = map[string]string{upperTarAnnotation: tar}
	}
	return &specs.Spec{
		Version:     specs.Version,
		Annotations: annotations,
		Process: &specs.Process{
			Terminal: false,
			User:     specs.User{UID: 0, GID: 0},
			Args:     agentArgs(spec),
			Env:      []string{defaultPath},
			Cwd:      "/",
			Rlimits:  processLimits(spec),
			Capabilities: &specs.LinuxCapabilities{
				Bounding:    caps,
				Effective:   agentCaps,
				Permitted:   agentCaps,
				Inheritable: agentOnlyCaps,
			},
		},
		Root:     &specs.Root{Path: "rootfs", Readonly: false},
		Hostname: hostname,
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: runtime.AgentPath, Type: "bind", Source: spec.AgentPath, Options: []string{"bind", "ro", "nosuid", "nodev"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: "/" + cgroupRel(spec.ID),
			Resources:   resources(spec),
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				{Type: specs.NetworkNamespace},
			},
		},
	}
}

// resources turns the spec's limits into cgroup settings; a zero limit is
// no limit. Swap equals memory (memory+swap on v1), so there is no swap.
func resources(spec runtime.Spec) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if spec.MemoryMB > 0 {
		limit := int64(spec.MemoryMB) << 20
		swap := limit
		r.Memory = &specs.LinuxMemory{Limit: &limit, Swap: &swap}
	}
	if spec.CPUs > 0 {
		quota := int64(spec.CPUs) * cpuPeriod
		period := uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if spec.PidsLimit > 0 {
		r.Pids = &specs.LinuxPids{Limit: spec.PidsLimit}
	}
	return r
}
