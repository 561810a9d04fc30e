// Command hutch-agent runs as PID 1 inside every hutch sandbox. It serves the
// Agent gRPC service over a yamux session on its stdin and stdout (in a
// microVM, where it is the initramfs's /init, on a virtio-serial port once
// it has set the guest up: agent.VMInit), runs
// processes for the daemon and reaps every orphan in the sandbox. On
// agentv1.RelinkSignal it drops its session for a new one (a restored
// sandbox's). As PID 1 it writes the sandbox's /etc/hosts (agent.WriteHosts)
// when it starts and when it relinks. Nothing but
// that session is ever written to stdout; logs go to stderr. It exits when
// the host closes the stream, or on SIGTERM or SIGINT. With --reattach
// (a cluster node's Pod sandbox, issue 35) a session that ends while the
// stream still works does not end it: it waits for a later daemon's relink.
//
// Build it static: CGO_ENABLED=0 go build ./cmd/hutch-agent.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(run()) }

func run() int {
	// issue 41: `hutch doctor` and `hutch version` ask the agent's version.
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("hutch-agent", version)
		return 0
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	var conn io.ReadWriteCloser
	var err error
	if agent.IsVMInit() {
		conn, err = agent.VMInit(log)
	} else {
		conn, err = agent.Stdio()
	}
	if err != nil {
		log.Error("opening the agent stream", "err", err)
		return 1
	}

	// As the sandbox's init, write its /etc/hosts (in its own writable
	// layer): localhost and its host name, with or without a network.
	sandboxInit := os.Getpid() == 1
	if sandboxInit {
		if err := agent.WriteHosts(agent.HostsPath); err != nil {
			log.Warn("writing /etc/hosts", "err", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Catch, and ignore, the other signals a parent may have left ignored.
	// A caught signal is reset to its default by execve, an ignored one would
	// stay ignored in every child. Catching SIGPIPE also turns a write to a
	// closed stream into an error instead of death.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE, syscall.SIGHUP)

	// issue 35: a sandbox that outlives its daemon.
	reattach := len(os.Args) == 2 && os.Args[1] == agentv1.ReattachFlag
	srv, err := agent.New(agent.Options{Version: version, ReapOrphans: true, Logger: log, Reattach: reattach})
	if err != nil {
		log.Error("starting the agent", "err", err)
		return 1
	}
	// A sandbox restored from a checkpoint is told to serve a new host
	// session (agentv1's relinking).
	link := agent.NewLink(conn, conn)
	relink := make(chan os.Signal, 1)
	signal.Notify(relink, agentv1.RelinkSignal)
	go func() {
		for range relink {
			// A restored sandbox may have another address.
			if sandboxInit {
				if err := agent.WriteHosts(agent.HostsPath); err != nil {
					log.Warn("writing /etc/hosts", "err", err)
				}
			}
			if err := link.Relink(); err != nil {
				log.Error("relinking", "err", err)
			}
		}
	}()
	if err := srv.ServeLink(ctx, link); err != nil {
		log.Error("serving", "err", err)
		return 1
	}
	return 0
}
