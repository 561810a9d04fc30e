package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Ps: every process of the sandbox, as /proc shows them, the way ps does.

// clockTicks is USER_HZ, the unit of /proc/N/stat's times: 100 on every
// Linux ABI, gVisor's included.
const clockTicks = 100

// passwdBytes bounds how much of /etc/passwd is read for user names, and
// statBytes of /proc/N/stat (a few hundred bytes).
const (
	passwdBytes = 1 << 20
	statBytes   = 4 << 10
)

// Ps describes every process of the sandbox but the agent.
func (s *Server) Ps(ctx context.Context, _ *agentv1.PsRequest) (*agentv1.PsResponse, error) {
	entries, err := readProcs("/proc", os.Getpid(), agentv1.MaxPsEntries)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading /proc: %v", err)
	}
	users := userNames("/etc/passwd")
	for _, e := range entries {
		e.User = users[e.GetUid()]
	}
	return &agentv1.PsResponse{Processes: entries}, nil
}

// readProcs reads up to limit processes of the /proc at root, skipping
// self and processes that vanish while they are read.
func readProcs(root string, self, limit int) ([]*agentv1.PsEntry, error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	uptime, err := readUptime(root)
	if err != nil {
		return nil, err
	}
	var out []*agentv1.PsEntry
	buf := make([]byte, max(statBytes, agentv1.MaxPsCommand))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		e, err := readProc(root+"/"+name, pid, uptime, buf)
		if err != nil {
			continue // gone, or unreadable: not a process to show
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// readUptime is the system's uptime in seconds, from root/uptime.
func readUptime(root string) (float64, error) {
	b, err := os.ReadFile(root + "/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("empty uptime")
	}
	return strconv.ParseFloat(f[0], 64)
}

// readProc describes the process whose /proc directory is dir; buf holds
// one file at a time.
func readProc(dir string, pid int, uptime float64, buf []byte) (*agentv1.PsEntry, error) {
	var dirStat unix.Stat_t
	if err := unix.Stat(dir, &dirStat); err != nil {
		return nil, err
	}
	st, err := parseStat(readSmall(dir+"/stat", buf))
	if err != nil {
		return nil, err
	}
	e := &agentv1.PsEntry{
		Pid:      int32(pid),
		Ppid:     int32(st.ppid),
		State:    st.state,
		RssBytes: st.rssPages * uint64(os.Getpagesize()),
		// /proc/N belongs to the process's effective user, as ps shows it.
		Uid: dirStat.Uid,
	}
	if alive := uptime - float64(st.startTicks)/clockTicks; alive > 0 {
		e.CpuPercent = float64(st.cpuTicks) / clockTicks / alive * 100
	}
	e.Command = command(readSmall(dir+"/cmdline", buf[:agentv1.MaxPsCommand]), st.comm)
	return e, nil
}

// readSmall reads what one read of path gives into buf (procfs answers a
// small file whole): three system calls where os.ReadFile makes six, and
// under gVisor each is dear. nil when it cannot be read.
func readSmall(path string, buf []byte) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

// procStat is what Ps takes from /proc/N/stat.
type procStat struct {
	comm       string
	state      string
	ppid       int
	cpuTicks   uint64 // utime + stime
	startTicks uint64
	rssPages   uint64
}

// parseStat parses /proc/N/stat. The command name sits in parentheses and
// may hold anything, parentheses and spaces included: it ends at the last
// ')'.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[end+1:]))
	// Fields after the name, from 3 (state): ppid 4, utime 14, stime 15,
	// starttime 22, rss 24.
	if len(f) < 22 {
		return procStat{}, errors.New("short stat")
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(f[i-3], 10, 64); return n }
	ppid, _ := strconv.Atoi(f[4-3])
	return procStat{
		comm:       string(b[open+1 : end]),
		state:      f[0][:1],
		ppid:       ppid,
		cpuTicks:   num(14) + num(15),
		startTicks: num(22),
		rssPages:   num(24),
	}, nil
}

// command is a process's command line from its NUL-separated cmdline, or
// its name in brackets when it has none (a kernel thread, a zombie), as
// valid UTF-8 of at most agentv1.MaxPsCommand bytes.
func command(cmdline []byte, comm string) string {
	s := strings.TrimRight(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), " ")
	if s == "" {
		s = "[" + comm + "]"
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	for len(s) > agentv1.MaxPsCommand {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// readBounded reads at most n bytes of path; nil when it cannot.
func readBounded(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}

// userNames maps the uids of the passwd file at path to their names, each
// clipped to agentv1.MaxPsUserBytes; empty when it cannot be read.
func userNames(path string) map[uint32]string {
	names := make(map[uint32]string)
	sc := bufio.NewScanner(bytes.NewReader(readBounded(path, passwdBytes)))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 4)
		if len(f) < 3 {
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil || len(f[0]) > agentv1.MaxPsUserBytes || !utf8.ValidString(f[0]) {
			continue
		}
		if _, seen := names[uint32(uid)]; !seen {
			names[uint32(uid)] = f[0]
		}
	}
	return names
}
