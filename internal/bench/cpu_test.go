package bench

import (
	"os"
	"testing"
	"time"
)

// sink keeps the CPU burner from being optimized away.
var sink int

func TestClassify(t *testing.T) {
	self := os.Getpid()
	all := map[int]process{
		2:    {ppid: 0},
		30:   {ppid: 2},
		100:  {ppid: 1, cmdline: "/usr/local/bin/hutch serve --config /etc/hutch.yaml "},
		200:  {ppid: 1, cmdline: "runsc-sandbox --root=/var/lib/hutch/gvisor/runsc boot abc "},
		201:  {ppid: 200},
		202:  {ppid: 201},
		300:  {ppid: 1, cmdline: "runsc-gofer --root=/x gofer abc "},
		400:  {ppid: 1, cmdline: "/usr/sbin/dockerd -H fd:// "},
		401:  {ppid: 1, cmdline: "/usr/bin/containerd-shim-runc-v2 -namespace moby "},
		402:  {ppid: 401, cmdline: "runc --root /run/docker/runtime-runc/moby exec "},
		310:  {ppid: 100, cmdline: "/usr/local/bin/runsc --root /var/lib/hutch/gvisor/runsc delete --force abc "},
		500:  {ppid: 1, cmdline: "/usr/bin/bash -c sleep "},
		501:  {ppid: 1},
		self: {ppid: 1, cmdline: "hutch bench --private "},
	}
	for pid, want := range map[int]string{
		2: classKernel, 30: classKernel, 100: classDaemon, 200: classSentry, 201: classStubs, 202: classStubs,
		300: classGofer, 310: classRunsc, 400: classDocker, 401: classDocker, 402: classDocker, 500: classOther, 501: classOther,
		self: classBench,
	} {
		if got := classify(pid, self, all); got != want {
			t.Errorf("classify(%d %q) = %q, want %q", pid, all[pid].cmdline, got, want)
		}
	}
}

func TestCPUPerExec(t *testing.T) {
	before := map[int]process{
		100: {ppid: 1, cmdline: "hutch serve ", ticks: 50},
		200: {ppid: 1, cmdline: "runsc-sandbox boot ", ticks: 1000},
		// Gone by the end: nothing of it counts.
		250: {ppid: 200, ticks: 70},
		// Its pid is reused by another command: the new one counts whole.
		500: {ppid: 1, cmdline: "old ", ticks: 900},
		// init: what it reaped does not count, its own time does.
		1: {ppid: 0, cmdline: "/sbin/init ", ticks: 100, childTicks: 1000},
	}
	after := map[int]process{
		100: {ppid: 1, cmdline: "hutch serve ", ticks: 60},                   // +10
		200: {ppid: 1, cmdline: "runsc-sandbox boot ", ticks: 1300},          // +300
		201: {ppid: 200, ticks: 100},                                         // new: +100
		500: {ppid: 1, cmdline: "new ", ticks: 20},                           // +20
		600: {ppid: 1, cmdline: "idle ", ticks: 5},                           // new, +5
		1:   {ppid: 0, cmdline: "/sbin/init ", ticks: 101, childTicks: 5000}, // +1
		// A reaped child counts in its parent.
		700: {ppid: 1, cmdline: "runsc-gofer x ", ticks: 3, childTicks: 4}, // new: +7
	}
	before[600] = process{ppid: 1, cmdline: "idle ", ticks: 5} // unchanged: 0
	got := cpuPerExec(before, after, 10)
	// 10 ticks = 100 ms over 10 execs = 10 ms per exec.
	want := []CPUShare{
		{classSentry, 300},
		{classStubs, 100},
		{classOther, 21},
		{classDaemon, 10},
		{classGofer, 7},
		{"total", 438},
	}
	if len(got) != len(want) {
		t.Fatalf("cpuPerExec = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Class != want[i].Class || got[i].MsPerExec != want[i].MsPerExec {
			t.Errorf("share %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if cpuPerExec(nil, after, 10) != nil || cpuPerExec(before, after, 0) != nil {
		t.Error("cpuPerExec without a snapshot or execs should say nothing")
	}
}

func TestProcessesReadsCPUTime(t *testing.T) {
	// Burn a little CPU so that this process has some.
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		sink++
	}
	procs, err := processes()
	if err != nil {
		t.Fatal(err)
	}
	me, ok := procs[os.Getpid()]
	if !ok || me.ticks == 0 {
		t.Errorf("this process: %+v, %v; want some CPU ticks", me, ok)
	}
}
