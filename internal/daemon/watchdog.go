package daemon

// The crash watchdog. Sandboxes outlive the process that starts them
// (runsc run --detach), and a sandbox's own end after its daemon died was
// left to its agent noticing EOF on its stdio, which code in the sandbox
// can prevent (it may SIGSTOP its PID 1). So a daemon starts a watchdog:
// the same binary (`hutch watchdog`), in a session of its own so that no
// signal for the daemon's process group or terminal reaches it, reading a
// pipe whose write end only the daemon holds. The kernel closes that end
// when the daemon exits, however it exits; the watchdog then destroys
// every sandbox in the state directories of the daemon's runtimes with
// each runtime's Reconcile (processes, mounts, cgroups, veths, firewall rules,
// directories) and exits. A daemon that shut down cleanly writes a
// stand-down byte first, and the watchdog exits without acting; one that
// shut down leaving its reattachable sandboxes (issue 35) writes a
// leave byte, and the watchdog acts as after a crash: it leaves those
// for the grace.
//
// The data dir lock keeps a watchdog and a new daemon on the same data dir
// apart: a daemon holds it for its whole life (waiting for it at start), a
// watchdog takes it before it acts and leaves the sandboxes to the new
// daemon's own reconcile when that one was first.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/netsvc"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// WatchdogCommand is the hidden CLI command that runs RunWatchdog.
const WatchdogCommand = "watchdog"

const (
	// watchdogReadyTimeout bounds the wait for a new watchdog's "ready",
	// and a clean shutdown's wait for it to exit.
	watchdogReadyTimeout = 30 * time.Second
	// watchdogWorkTimeout bounds a watchdog's cleanup.
	watchdogWorkTimeout = 45 * time.Second
	// dataDirLockWait is how long a starting daemon waits for the data
	// dir lock; it outlasts a watchdog's cleanup.
	dataDirLockWait = 60 * time.Second
	// maxJobBytes bounds the job a watchdog reads.
	maxJobBytes = 64 << 10
	// standDown, written by a daemon that shut down cleanly, tells its
	// watchdog to exit without acting.
	standDown = 'q'
	// leaveReattachable, written by a daemon that shut down leaving its
	// reattachable sandboxes running (issue 35), tells its watchdog to
	// leave them to a restarted daemon for the grace, as after a crash.
	leaveReattachable = 'r'
	// watchdogReady is the watchdog's answer once it can act.
	watchdogReady = "ready\n"
	// lockFileName is the data dir lock, in the data dir.
	lockFileName = "daemon.lock"
)

// reattachPoll is how often a watchdog leaving reattachable sandboxes to
// a restarted daemon looks for one: it exits once a daemon holds the lock.
const reattachPoll = 250 * time.Millisecond

// watchdogLockWait is how long a watchdog tries for the data dir lock,
// which its dead daemon's exit releases a moment after closing the pipe.
var watchdogLockWait = 5 * time.Second

// errLocked is the error of a data dir lock held by another process.
var errLocked = errors.New("locked by another hutch daemon or by the watchdog of a crashed one")

// watchdogJob is what a daemon hands its watchdog, as JSON on the pipe:
// how to build the same runtimes (options by name), and the data dir lock.
type watchdogJob struct {
	Runtimes map[string]runtime.Options
	// Network are the options of the network service, which tears down
	// the sandboxes' networks once their runtimes destroyed them; nil is
	// none.
	Network  *netsvc.Options `json:",omitempty"`
	LockPath string
	// ReattachGrace, when not 0, is how long the sandboxes started to be
	// reattached are left to a restarted daemon (issue 35).
	ReattachGrace time.Duration `json:",omitempty"`
}

// watchdog is a daemon's handle on its watchdog process.
type watchdog struct {
	cmd *exec.Cmd
	// pipe is the write end whose EOF tells the watchdog the daemon is gone.
	pipe     *os.File
	exited   chan struct{}
	stopping atomic.Bool
}

// startWatchdog starts `hutch watchdog` (this binary) with job and waits
// until it says it can act. Its log goes to this process's stderr.
func startWatchdog(job watchdogJob, log *slog.Logger) (*watchdog, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting the crash watchdog: finding the hutch binary: %w", err)
	}
	jobR, jobW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the crash watchdog: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		jobR.Close()
		jobW.Close()
		return nil, fmt.Errorf("starting the crash watchdog: %w", err)
	}
	defer readyR.Close()
	cmd := exec.Command(self, WatchdogCommand)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = jobR, readyW, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	jobR.Close()
	readyW.Close()
	if err != nil {
		jobW.Close()
		return nil, fmt.Errorf("starting the crash watchdog: %w", err)
	}
	w := &watchdog{cmd: cmd, pipe: jobW, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if !w.stopping.Load() {
			log.Error("crash watchdog exited; sandboxes will outlive a crash of this daemon", "err", err)
		}
		close(w.exited)
	}()
	if err := sendJob(jobW, readyR, job); err != nil {
		w.stopping.Store(true)
		_ = cmd.Process.Kill()
		jobW.Close()
		<-w.exited
		return nil, fmt.Errorf("starting the crash watchdog (crash_watchdog: false turns it off): %w", err)
	}
	return w, nil
}

// sendJob writes job to a new watchdog and waits for its ready line.
func sendJob(pipe, ready *os.File, job watchdogJob) error {
	if err := json.NewEncoder(pipe).Encode(job); err != nil {
		return fmt.Errorf("sending its job: %w", err)
	}
	_ = ready.SetReadDeadline(time.Now().Add(watchdogReadyTimeout))
	line, err := bufio.NewReaderSize(io.LimitReader(ready, 64), 64).ReadString('\n')
	if line != watchdogReady {
		return fmt.Errorf("it did not get ready (its error is logged above): %q, %v", line, err)
	}
	return nil
}

// stop ends the watchdog at a daemon's shutdown. After a clean one (every
// sandbox stopped) the watchdog stands down and stop waits for it to
// exit; otherwise it is left to clean up once this process has exited.
// With reattach (issue 35), a clean shutdown left the reattachable
// sandboxes running: the watchdog is told so, and its pipe is left open
// until this process exits, so that it takes the data dir lock only
// once this daemon has released it.
func (w *watchdog) stop(clean, reattach bool) {
	w.stopping.Store(true)
	if clean && reattach {
		_, _ = w.pipe.Write([]byte{leaveReattachable})
		return
	}
	if clean {
		_, _ = w.pipe.Write([]byte{standDown})
	}
	w.pipe.Close()
	if clean {
		select {
		case <-w.exited:
		case <-time.After(watchdogReadyTimeout):
		}
	}
}

// RunWatchdog is the watchdog process. It reads its job from in, builds
// the daemon's runtimes (so that it knows it can act), writes "ready" to
// out, and waits for in to end. A stand-down byte means the daemon shut
// down cleanly; EOF without one means it died, and RunWatchdog destroys
// every sandbox of those runtimes, under the data dir lock, but those
// left to a restarted daemon for job.ReattachGrace. The leave byte of a
// daemon that shut down leaving them is acted on as its death.
func RunWatchdog(in io.Reader, out io.Writer, log *slog.Logger) error {
	// Its log outlives the daemon's stderr reader (a test harness, a
	// terminal): a write there that fails must not end it (Go's default
	// for a broken stdout or stderr) before it has cleaned up.
	signal.Ignore(syscall.SIGPIPE)
	var job watchdogJob
	dec := json.NewDecoder(io.LimitReader(in, maxJobBytes))
	if err := dec.Decode(&job); err != nil {
		return fmt.Errorf("watchdog: reading its job: %w", err)
	}
	var rts []runtime.Runtime
	for _, name := range slices.Sorted(maps.Keys(job.Runtimes)) {
		opts := job.Runtimes[name]
		// The daemon has logged what the runtime says at start already.
		opts.Logger = slog.New(slog.DiscardHandler)
		rt, err := runtime.New(name, opts)
		if err != nil {
			return fmt.Errorf("watchdog: starting runtime %s: %w", name, err)
		}
		rts = append(rts, rt)
	}
	var nw *netsvc.Service
	if job.Network != nil {
		var err error
		if nw, err = netsvc.New(*job.Network); err != nil {
			return fmt.Errorf("watchdog: the network service: %w", err)
		}
	}
	if _, err := io.WriteString(out, watchdogReady); err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	end := lastByte(io.MultiReader(dec.Buffered(), in))
	if end == standDown {
		return nil
	}
	log = log.With("component", "watchdog", "lock", job.LockPath)
	release, err := lockFile(job.LockPath, watchdogLockWait)
	if err != nil {
		log.Info("daemon gone; a new one holds its data dir and reconciles it", "err", err)
		return nil
	}
	defer release()
	if end == leaveReattachable {
		log.Info("daemon shut down leaving its reattachable sandboxes; destroying any other")
	} else {
		log.Warn("daemon gone without shutting down; destroying its sandboxes")
	}
	kept := false
	err = sweep(rts, nw, func(rt runtime.Runtime, id string) bool {
		a, ok := rt.(runtime.Adopter)
		keep := job.ReattachGrace > 0 && ok && a.Reattachable(id)
		kept = kept || keep
		return keep
	}, log)
	if !kept {
		return err
	}
	// issue 35: the sandboxes started to be reattached are left to a
	// daemon that comes back within the grace, which takes the data dir
	// lock and adopts them; past it, they go too.
	release()
	log.Info("leaving the reattachable sandboxes to a restarted daemon", "grace", job.ReattachGrace)
	for deadline := time.Now().Add(job.ReattachGrace); ; time.Sleep(reattachPoll) {
		again, lerr := lockFile(job.LockPath, 0)
		if lerr != nil {
			log.Info("a new daemon holds the data dir and adopts the sandboxes", "err", lerr)
			return err
		}
		if time.Now().After(deadline) {
			defer again()
			break
		}
		again()
	}
	log.Warn("no daemon came back within the grace; destroying the reattachable sandboxes")
	return errors.Join(err, sweep(rts, nw, func(runtime.Runtime, string) bool { return false }, log))
}

// sweep destroys every sandbox of rts that keep rejects, then the
// networks of every sandbox but the kept ones (issue 35).
func sweep(rts []runtime.Runtime, nw *netsvc.Service, keep func(rt runtime.Runtime, id string) bool, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), watchdogWorkTimeout)
	defer cancel()
	var errs []error
	kept := map[string]bool{}
	for _, rt := range rts {
		destroyed, err := rt.Reconcile(ctx, func(id string) bool {
			kept[id] = kept[id] || keep(rt, id)
			return kept[id]
		})
		log.Info("destroyed the sandboxes of a dead daemon", "runtime", rt.Name(), "ids", destroyed)
		if err != nil {
			errs = append(errs, fmt.Errorf("watchdog: runtime %s: %w", rt.Name(), err))
		}
	}
	if nw != nil {
		detached, err := nw.Reconcile(ctx, func(id string) bool { return kept[id] })
		log.Info("removed the sandbox networks of a dead daemon", "ids", detached)
		if err != nil {
			errs = append(errs, fmt.Errorf("watchdog: network: %w", err))
		}
	}
	return errors.Join(errs...)
}

// lastByte reads r to its end, which comes when the daemon exits or
// shuts down, and returns the last byte the daemon wrote (standDown,
// leaveReattachable), 0 for none.
func lastByte(r io.Reader) byte {
	var b [1]byte
	got := byte(0)
	for {
		n, err := r.Read(b[:])
		if n == 1 {
			got = b[0]
		}
		if err != nil {
			return got
		}
	}
}

// lockDataDir takes the data dir lock of a starting daemon, waiting (and
// saying so) while another process holds it.
func lockDataDir(dataDir string, log *slog.Logger) (release func(), err error) {
	path := dataDirLock(dataDir)
	release, err = lockFile(path, 0)
	if errors.Is(err, errLocked) {
		log.Warn("waiting for the data dir lock", "lock", path, "err", err)
		release, err = lockFile(path, dataDirLockWait)
	}
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	return release, nil
}

// dataDirLock is the path of dataDir's lock file.
func dataDirLock(dataDir string) string { return filepath.Join(dataDir, lockFileName) }

// lockFile takes an exclusive flock on path (creating it), trying for up
// to wait; release drops it. The descriptor is close-on-exec, so no child
// process inherits the lock.
func lockFile(path string, wait time.Duration) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the flock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errLocked
		}
	}
}
