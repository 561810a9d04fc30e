package microvm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestQEMUArgs(t *testing.T) {
	c := vmConfig{accel: "tcg", kernel: "/k", initrd: "/i", rootDisk: "/d.ext4", socket: "/s/agent.sock", cpus: 2, memoryMB: 64, cmdline: "console=ttyS0"}
	args := strings.Join(qemuArgs(c), " ")
	for _, want := range []string{
		"-M microvm,isa-serial=on", "-nodefaults", "-no-user-config", "-no-reboot",
		"-accel tcg", "-smp 2", "-m 192", "-kernel /k", "-initrd /i", "-append console=ttyS0",
		"file=/d.ext4,format=raw,if=none,readonly=on", "virtio-blk-device,drive=root,serial=hutch-root",
		"socket,id=agent,path=/s/agent.sock,server=on,wait=off", "virtserialport,chardev=agent,name=hutch.agent",
		"virtio-balloon-device,free-page-reporting=on", "-qmp unix:qmp.sock,server=on,wait=off",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "hutch-rw") {
		t.Errorf("qemu args without a writable disk have one: %s", args)
	}
	c.accel, c.cpus, c.memoryMB, c.rwDisk = "kvm", 0, 1024, "/s/rw.ext4"
	args = strings.Join(qemuArgs(c), " ")
	for _, want := range []string{"-accel kvm", "-cpu host", "-smp 1", "-m 1024",
		"file=/s/rw.ext4,format=raw,if=none,cache=unsafe", "virtio-blk-device,drive=rw,serial=hutch-rw"} {
		if !strings.Contains(args, want) {
			t.Errorf("kvm qemu args lack %q: %s", want, args)
		}
	}
}

func TestKernelCmdline(t *testing.T) {
	tests := []struct {
		p             guestParams
		want, wantNot []string
	}{
		{p: guestParams{hostname: "box", writableMB: 100, tscKHz: 2596000, pidsMax: 512},
			want: []string{"console=ttyS0", "panic=-1", "hutch.vm=1", "hutch.hostname=box", "hutch.writable_mb=100",
				"tsc_early_khz=2596000", "tsc=reliable", "hutch.pids_max=512"}},
		{p: guestParams{hostname: "bad host=x"}, wantNot: []string{"hutch.hostname", "hutch.writable", "tsc", "pids"}},
		{p: guestParams{rwDisk: true, writableMB: 100}, want: []string{"hutch.writable_disk=1"}, wantNot: []string{"hutch.writable_mb"}},
	}
	for _, tt := range tests {
		words := strings.Fields(kernelCmdline(tt.p))
		for _, w := range tt.want {
			if !slices.Contains(words, w) {
				t.Errorf("cmdline %q lacks %q", words, w)
			}
		}
		for _, w := range tt.wantNot {
			if strings.Contains(strings.Join(words, " "), w) {
				t.Errorf("cmdline %q has %q", words, w)
			}
		}
	}
}

func TestFindKernel(t *testing.T) {
	root := t.TempDir()
	boot, mods := filepath.Join(root, "boot"), filepath.Join(root, "modules")
	files := map[string]string{
		"boot/vmlinuz-6.1.0-9-cloud-amd64":  "",
		"boot/vmlinuz-6.1.0-10-cloud-amd64": "",
		"boot/vmlinuz-6.1.0-10-amd64":       "",
	}
	ver := "6.1.0-10-cloud-amd64"
	for i, m := range guestModules {
		switch i {
		case 1: // compressed
			files["modules/"+ver+"/"+m+".ko.xz"] = ""
		case 4: // built in
		default:
			files["modules/"+ver+"/"+m+".ko"] = ""
		}
	}
	files["modules/"+ver+"/modules.builtin"] = guestModules[4] + ".ko\nkernel/other.ko\n"
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, err := findKernel("", boot, mods)
	if err != nil {
		t.Fatal(err)
	}
	if k.version != ver || k.path != filepath.Join(boot, "vmlinuz-"+ver) {
		t.Errorf("kernel %s at %s, want the newest cloud kernel %s", k.version, k.path, ver)
	}
	if len(k.modules) != len(guestModules)-1 || !strings.HasSuffix(k.modules[1], "virtio.ko.xz") {
		t.Errorf("modules %q: want all but the built-in one, the compressed one as it is", k.modules)
	}
	if _, err := findKernel(filepath.Join(boot, "vmlinuz-6.1.0-9-cloud-amd64"), boot, mods); err == nil || !strings.Contains(err.Error(), "neither in") {
		t.Errorf("a kernel without modules: %v", err)
	}
	if _, err := findKernel("", filepath.Join(root, "none"), mods); err == nil || !strings.Contains(err.Error(), "make deps-microvm") {
		t.Errorf("no kernel: %v", err)
	}
}

func TestVersionLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		less bool
	}{
		{"vmlinuz-6.1.0-9-cloud", "vmlinuz-6.1.0-10-cloud", true},
		{"vmlinuz-6.1.0-10-cloud", "vmlinuz-6.1.0-9-cloud", false},
		{"vmlinuz-5.10.0-1", "vmlinuz-6.1.0-1", true},
		{"vmlinuz-6.1.0-1", "vmlinuz-6.1.0-1", false},
		{"vmlinuz-6.1", "vmlinuz-6.1.0", true},
	} {
		if got := versionLess(tt.a, tt.b); got != tt.less {
			t.Errorf("versionLess(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestCPUInfo(t *testing.T) {
	info := "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.122\nflags\t\t: fpu sse2 hypervisor\n"
	if got := hostTSCkHz(info); got != 2596122 {
		t.Errorf("hostTSCkHz = %d, want 2596122", got)
	}
	if hostTSCkHz("flags: x\n") != 0 {
		t.Error("hostTSCkHz without cpu MHz: not 0")
	}
	if hasHardwareVirt(info) {
		t.Error("hasHardwareVirt without vmx or svm: true")
	}
	if !hasHardwareVirt(strings.Replace(info, "sse2", "sse2 vmx", 1)) || !hasHardwareVirt("flags : svm\n") {
		t.Error("hasHardwareVirt with vmx or svm: false")
	}
}

func TestChooseAccel(t *testing.T) {
	yes := func() error { return nil }
	no := func() error { return errors.New("no /dev/kvm") }
	tests := []struct {
		setting string
		kvm     func() error
		want    string
		wantErr bool
	}{
		{AccelAuto, yes, "kvm", false},
		{AccelAuto, no, "tcg", false},
		{AccelTCG, yes, "tcg", false},
		{AccelKVM, yes, "kvm", false},
		{AccelKVM, no, "", true},
	}
	for _, tt := range tests {
		got, why, err := chooseAccel(tt.setting, tt.kvm)
		if got != tt.want || (err != nil) != tt.wantErr || (err == nil && why == "") {
			t.Errorf("chooseAccel(%s) = %q, %q, %v; want %q (error %v)", tt.setting, got, why, err, tt.want, tt.wantErr)
		}
	}
}

func TestInitramfs(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "hutch-agent")
	mod := filepath.Join(dir, "virtio.ko")
	for p, c := range map[string]string{agent: "agent-v1", mod: "module"} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "cache")
	in := initramfsInputs{agent: agent, modules: []string{mod}}
	p1, err := buildInitramfs(cache, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cpioEntry{}
	for _, e := range readNewc(t, b) {
		byName[e.name] = e
	}
	if e := byName["init"]; e.data != "agent-v1" || e.mode != 0o100755 {
		t.Errorf("/init = %+v, want the agent, executable", e)
	}
	if e := byName["lib/modules/hutch/00-virtio.ko"]; e.data != "module" {
		t.Errorf("module = %+v", e)
	}
	if e := byName["dev/console"]; e.rmaj != 5 || e.rmin != 1 {
		t.Errorf("/dev/console = %+v", e)
	}
	if again, err := buildInitramfs(cache, in); err != nil || again != p1 {
		t.Errorf("same inputs: %s, %v; want the cached %s", again, err, p1)
	}
	if err := os.WriteFile(agent, []byte("agent-v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p2, err := buildInitramfs(cache, in); err != nil || p2 == p1 {
		t.Errorf("a new agent: %s, %v; want a new initramfs", p2, err)
	}
	// The egress CA (issue 37) is a file of its own, in a new initramfs.
	ca := filepath.Join(dir, "egress-ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in.ca = ca
	p3, err := buildInitramfs(cache, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(p3)
	if err != nil {
		t.Fatal(err)
	}
	byName = map[string]cpioEntry{}
	for _, e := range readNewc(t, b) {
		byName[e.name] = e
	}
	if e := byName[strings.TrimPrefix(vmspec.EgressCAPath, "/")]; e.data != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("egress CA = %+v", e)
	}
}

func TestEgressCA(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.pem"), filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(good, []byte("-----BEGIN CERTIFICATE-----\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for nw, want := range map[*runtime.NetworkAttachment]string{
		nil: "", {}: "", {CACert: good}: good, {CACert: bad}: "", {CACert: filepath.Join(dir, "none")}: "",
	} {
		if got := egressCA(nw); got != want {
			t.Errorf("egressCA(%+v) = %q, want %q", nw, got, want)
		}
	}
}

func TestCheckSpec(t *testing.T) {
	ok := runtime.Spec{ID: "a1", Image: runtime.Artifact{Kind: runtime.ArtifactBlock, Path: "/d"}, AgentPath: "/a"}
	if err := checkSpec(ok); err != nil {
		t.Fatalf("checkSpec(%+v) = %v", ok, err)
	}
	for name, mod := range map[string]func(*runtime.Spec){
		"bad id":        func(s *runtime.Spec) { s.ID = "../x" },
		"directory":     func(s *runtime.Spec) { s.Image.Kind = runtime.ArtifactDir },
		"without agent": func(s *runtime.Spec) { s.AgentPath = "" },
	} {
		s := ok
		mod(&s)
		if err := checkSpec(s); err == nil {
			t.Errorf("%s: checkSpec accepted %+v", name, s)
		}
	}
	// What the runtime lacks is S302, as the manager's refusals are.
	for name, mod := range map[string]func(*runtime.Spec){
		"mounts": func(s *runtime.Spec) { s.Mounts = []runtime.Mount{{Source: "/a", Destination: "/b"}} },
		"layer":  func(s *runtime.Spec) { s.UpperLayer = "/l.tar" },
	} {
		s := ok
		mod(&s)
		if err := unsupported(s); !errdefs.Is(err, errdefs.CodeUnsupported) {
			t.Errorf("%s: unsupported = %v, want S302", name, err)
		}
	}
	if err := unsupported(ok); err != nil {
		t.Errorf("unsupported(%+v) = %v", ok, err)
	}
}

// TestReconcileLeftovers: a crashed daemon's sandbox directories go, and
// the process a pid file names is killed only if it is that sandbox's.
func TestReconcileLeftovers(t *testing.T) {
	r := &Runtime{stateDir: t.TempDir(), live: map[string]*instance{}, cg: cgroups.Layout{Root: t.TempDir()}}
	if err := mkdirs(r.sandboxesDir()); err != nil {
		t.Fatal(err)
	}
	start := func(dir string, args ...string) *exec.Cmd {
		cmd := exec.Command("sh", append([]string{"-c", "sleep 60", "sh"}, args...)...)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	leftover := func(id string, pid int) {
		dir := r.sandboxDir(id)
		if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"old", "reused", "notqemu", "kept"} {
		if err := os.Mkdir(r.sandboxDir(id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	qemuLike := "path=" + socketName + ",server=on"
	ours := start(r.sandboxDir("old"), qemuLike)
	// A QEMU-like process of another directory, and one in the right
	// directory that is no QEMU: pids the pid files may name after reuse.
	stranger := start(r.sandboxDir("kept"), qemuLike)
	other := start(r.sandboxDir("notqemu"))
	leftover("old", ours.Process.Pid)
	leftover("reused", stranger.Process.Pid)
	leftover("notqemu", other.Process.Pid)
	leftover("kept", stranger.Process.Pid)
	waited := make(chan error, 1)
	go func() { waited <- ours.Wait() }()

	ids, err := r.Reconcile(context.Background(), func(id string) bool { return id == "kept" })
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"notqemu", "old", "reused"}) {
		t.Errorf("Reconcile = %v, %v; want notqemu, old and reused", ids, err)
	}
	if err := <-waited; err == nil {
		t.Error("the leftover's process was not killed")
	}
	if !processExists(stranger.Process.Pid) || !processExists(other.Process.Pid) {
		t.Error("a process the pid file names but that is not the sandbox's was killed")
	}
	entries, _ := os.ReadDir(r.sandboxesDir())
	var left bytes.Buffer
	for _, e := range entries {
		left.WriteString(e.Name())
	}
	if left.String() != "kept" {
		t.Errorf("sandbox directories left: %q, want kept", left.String())
	}
}

// TestQMP drives qmp against a stand-in monitor: the greeting, an event
// before the reply, a command's error.
func TestQMP(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, qmpSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				fmt.Fprintln(conn, `{"QMP": {"version": {}, "capabilities": []}}`)
				sc := bufio.NewScanner(conn)
				for sc.Scan() {
					var req struct{ Execute string }
					_ = json.Unmarshal(sc.Bytes(), &req)
					switch req.Execute {
					case "qmp_capabilities":
						fmt.Fprintln(conn, `{"return": {}}`)
					case "query-status":
						fmt.Fprintln(conn, `{"event": "STOP", "timestamp": {}}`)
						fmt.Fprintln(conn, `{"return": {"status": "paused", "running": false}}`)
					default:
						fmt.Fprintln(conn, `{"error": {"class": "CommandNotFound", "desc": "no such command"}}`)
					}
				}
			}()
		}
	}()
	inst := &instance{dir: dir}
	if st, err := inst.status(context.Background()); err != nil || st != "paused" {
		t.Errorf("status = %q, %v; want paused", st, err)
	}
	if err := inst.Pause(context.Background()); err == nil || !strings.Contains(err.Error(), "CommandNotFound") {
		t.Errorf("a command the monitor refuses: %v", err)
	}
	if _, err := qmp(context.Background(), filepath.Join(dir, "none"), "stop"); err == nil {
		t.Error("qmp without a monitor: no error")
	}
}

func TestProcStats(t *testing.T) {
	stat := "4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 1000000 5000 18446744073709551615\n"
	if got, err := cpuSeconds(stat); err != nil || got != 3 {
		t.Errorf("cpuSeconds = %v, %v; want 3", got, err)
	}
	if _, err := cpuSeconds("4242 (x) S 1"); err == nil {
		t.Error("cpuSeconds of a short line: no error")
	}
	if got := rssBytes("Name:\tqemu\nVmRSS:\t  327052 kB\nThreads: 3\n"); got != 327052<<10 {
		t.Errorf("rssBytes = %d", got)
	}
	if got := rssBytes("Name:\tqemu\n"); got != 0 {
		t.Errorf("rssBytes without VmRSS = %d", got)
	}
}

// TestInitramfsFor: a Runtime builds an initramfs per agent binary once,
// and drops the files of agents it no longer uses.
func TestInitramfsFor(t *testing.T) {
	dir := t.TempDir()
	r := &Runtime{stateDir: dir, initramfs: map[agentKey]string{}}
	stale := filepath.Join(r.initramfsDir(), "0123.cpio")
	if err := mkdirs(r.initramfsDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "hutch-agent")
	if err := os.WriteFile(agent, []byte("agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := r.initramfsFor(agent, "")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.initramfsFor(agent, ""); err != nil || again != p {
		t.Errorf("second initramfsFor = %s, %v; want %s", again, err, p)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier agent's initramfs is left: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the initramfs in use is gone: %v", err)
	}
}

// A boot under TCG emulation is given tcgBootTimeout; under KVM the
// daemon's own timeout applies.
func TestBootTimeout(t *testing.T) {
	if got := (&Runtime{accel: AccelTCG}).BootTimeout(); got != tcgBootTimeout {
		t.Errorf("TCG: %v, want %v", got, tcgBootTimeout)
	}
	if got := (&Runtime{accel: AccelKVM}).BootTimeout(); got != 0 {
		t.Errorf("KVM: %v, want 0", got)
	}
}
