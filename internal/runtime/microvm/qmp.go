package microvm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// qmpSocketName is QEMU's monitor socket (QMP) in a sandbox's directory.
const qmpSocketName = "qmp.sock"

// qmpTimeout bounds one monitor command when ctx has no deadline.
const qmpTimeout = 10 * time.Second

// qmpMaxLine bounds a line QEMU's monitor sends.
const qmpMaxLine = 1 << 20

// qmpReply is one line QEMU's monitor sends: a command's return or error,
// or an asynchronous event (skipped).
type qmpReply struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	Event string `json:"event"`
}

// qmp runs one command on the monitor of the VM whose directory is dir and
// returns its result: it connects, leaves the greeting's capabilities
// negotiation mode, sends the command and hangs up.
func qmp(ctx context.Context, dir, command string) (json.RawMessage, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, qmpTimeout)
		defer cancel()
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("qmp %s: %w", command, err)
	}
	defer d.Close()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), qmpSocketName))
	if err != nil {
		return nil, fmt.Errorf("qmp %s: %w", command, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 4096), qmpMaxLine)
	if !sc.Scan() { // the greeting
		return nil, fmt.Errorf("qmp %s: no greeting: %v", command, sc.Err())
	}
	for _, cmd := range []string{"qmp_capabilities", command} {
		if _, err := fmt.Fprintf(conn, `{"execute":%q}`+"\n", cmd); err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		ret, err := qmpResult(sc)
		if err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		if cmd == command {
			return ret, nil
		}
	}
	return nil, errors.New("unreachable")
}

// qmpResult reads lines until a command's reply, skipping events.
func qmpResult(sc *bufio.Scanner) (json.RawMessage, error) {
	for sc.Scan() {
		var r qmpReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("bad reply: %w", err)
		}
		switch {
		case r.Event != "":
			continue
		case r.Error != nil:
			return nil, fmt.Errorf("%s: %s", r.Error.Class, r.Error.Desc)
		default:
			return r.Return, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("monitor closed")
}

// Pause stops the VM's vCPUs (QMP stop): every process in it freezes, and
// the agent does not answer until Resume.
func (i *instance) Pause(ctx context.Context) error {
	_, err := qmp(ctx, i.dir, "stop")
	return err
}

// Resume starts the VM's vCPUs again (QMP cont).
func (i *instance) Resume(ctx context.Context) error {
	_, err := qmp(ctx, i.dir, "cont")
	return err
}

// status is the VM's run state from QMP query-status ("running",
// "paused").
func (i *instance) status(ctx context.Context) (string, error) {
	ret, err := qmp(ctx, i.dir, "query-status")
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(ret, &s); err != nil {
		return "", fmt.Errorf("qmp query-status: %w", err)
	}
	return s.Status, nil
}
