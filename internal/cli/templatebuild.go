package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// maxCLIContextBytes bounds the build context the CLI sends.
const maxCLIContextBytes = 256 << 20

// templateBuildCmd is `hutch template build` (issue 39).
func (a *app) templateBuildCmd() *cobra.Command {
	var req api.TemplateBuildRequest
	var file string
	var args []string
	cmd := &cobra.Command{
		Use:   "build [-f Dockerfile] --name NAME CONTEXT",
		Short: "Build a template from a Dockerfile and a context directory: steps as they run (cached ones marked), then the template's name",
		Args:  cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "the Dockerfile (default CONTEXT/Dockerfile)")
	fl.StringVar(&req.Name, "name", "", "the template's name (required)")
	fl.StringArrayVar(&args, "build-arg", nil, "set an ARG: KEY=VALUE (repeatable)")
	fl.StringVar(&req.Target, "target", "", "the stage to build (default the last)")
	fl.BoolVar(&req.Network, "network", false, "give RUN steps and the template's sandboxes a network")
	fl.Uint32Var(&req.CPUs, "cpus", 0, "cpus of the build's and the template's sandboxes")
	fl.Uint32Var(&req.MemoryMB, "memory", 0, "memory (MiB) of the build's and the template's sandboxes")
	fl.StringVar(&req.StartCmd, "start-cmd", "", "the command started once and snapshotted running (default CMD/ENTRYPOINT)")
	fl.StringVar(&req.ReadyCmd, "ready-cmd", "", "the start command is ready when this exits 0")
	fl.Uint16Var(&req.ReadyPort, "ready-port", 0, "the start command is ready when this port accepts a connection")
	fl.BoolVar(&req.NoCache, "no-cache", false, "run every step again")
	var egress api.EgressPolicy
	egressFlags(cmd, &egress) // the RUN steps' policy
	cmd.RunE = action(func(cmd *cobra.Command, pos []string) error {
		if req.Name == "" {
			return fmt.Errorf("--name is required")
		}
		dir := pos[0]
		if file == "" {
			file = filepath.Join(dir, "Dockerfile")
		}
		df, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		req.Dockerfile = string(df)
		if !egress.Empty() {
			req.Egress = &egress
		}
		if req.Context, err = tarDir(dir); err != nil {
			return err
		}
		for _, kv := range args {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				v, ok = os.LookupEnv(k)
			}
			if ok {
				if req.BuildArgs == nil {
					req.BuildArgs = map[string]string{}
				}
				req.BuildArgs[k] = v
			}
		}
		out, err := a.client().BuildTemplate(cmd.Context(), req, func(ev api.TemplateBuildEvent) error {
			a.buildProgress(ev)
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "built %s: %d steps, %d cached, %.1f s\n", out.Template.Name, out.Steps, out.CachedSteps, float64(out.DurationMs)/1000)
		fmt.Fprintln(a.stdout, out.Template.Name)
		return nil
	})
	return cmd
}

// buildProgress writes one build event on stderr.
func (a *app) buildProgress(ev api.TemplateBuildEvent) {
	switch ev.Phase {
	case "step":
		cached := ""
		if ev.Cached {
			cached = " (cached)"
		}
		fmt.Fprintf(a.stderr, "[%d/%d] line %d: %s%s\n", ev.Step, ev.Steps, ev.Line, ev.Instruction, cached)
	case "output":
		fmt.Fprintf(a.stderr, "    %s\n", ev.Output)
	case "start":
		if ev.Cached {
			fmt.Fprintf(a.stderr, "start command unchanged: its snapshot is kept (cached)\n")
			return
		}
		fmt.Fprintf(a.stderr, "starting: %s\n", ev.Output)
	case "snapshot":
		fmt.Fprintln(a.stderr, "ready: snapshotting it running")
	}
}

// tarDir is a tar of dir (tarfs.Pack), at most maxCLIContextBytes.
func tarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	w := &cappedWriter{w: &buf, left: maxCLIContextBytes}
	if _, err := tarfs.Pack(w, dir, tarfs.PackOptions{}); err != nil {
		if w.left < 0 {
			return nil, fmt.Errorf("the build context %s holds more than %d MiB", dir, maxCLIContextBytes>>20)
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// cappedWriter fails a write past its bound.
type cappedWriter struct {
	w    io.Writer
	left int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.left -= int64(len(p)); c.left < 0 {
		return 0, errors.New("too large")
	}
	return c.w.Write(p)
}
