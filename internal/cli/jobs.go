package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

func (a *app) jobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Queue commands that hutch runs in order and retries (submit, get, ls, cancel, dlq, retry)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.jobSubmitCmd(), a.jobGetCmd(), a.jobListCmd(api.FnJobList), a.jobListCmd(api.FnJobDLQ), a.jobEachCmd("cancel"), a.jobEachCmd("retry"))
	return cmd
}

func (a *app) jobSubmitCmd() *cobra.Command {
	var req api.JobSubmitRequest
	var env []string
	var timeout time.Duration
	var retries int
	var wait bool
	cmd := &cobra.Command{
		Use:   "submit (--sandbox ID | --image IMAGE | --template NAME) [flags] -- CMD [ARG...]",
		Short: "Queue a command; prints the job id (--wait: wait for its end, print its output and exit with its status)",
		Args:  cobra.MinimumNArgs(1),
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	fl.StringVar(&req.SandboxID, "sandbox", "", "run in this sandbox, after its earlier jobs")
	fl.StringVar(&req.Image, "image", "", "run in a sandbox of this image created for the job, stopped after")
	fl.StringVar(&req.Template, "template", "", "run in a sandbox of this template created for the job, stopped after")
	fl.StringArrayVarP(&env, "env", "e", nil, "set KEY=VALUE for the command (repeatable)")
	fl.StringVarP(&req.Workdir, "workdir", "w", "", "working directory inside the sandbox")
	fl.DurationVar(&timeout, "timeout", 0, "kill the command after this long")
	fl.IntVar(&retries, "retries", -1, "times a failed attempt is tried again (default 3)")
	fl.BoolVar(&req.RetryOnExit, "retry-on-exit", false, "retry a non-zero exit or a timeout too, not only a failure of the infrastructure")
	fl.BoolVar(&wait, "wait", false, "wait for the job to end; print its output; exit with its status")
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		req.Argv, req.Env = args, parseEnv(env)
		var err error
		if req.TimeoutMs, err = timeoutMs(timeout); err != nil {
			return err
		}
		if retries >= 0 {
			req.MaxRetries = &retries
		}
		c := a.client()
		info, err := c.SubmitJob(cmd.Context(), req)
		if err != nil {
			return err
		}
		if !wait {
			fmt.Fprintln(a.stdout, info.JobID)
			return nil
		}
		for info.State == api.JobQueued || info.State == api.JobRunning {
			select {
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			case <-time.After(200 * time.Millisecond):
			}
			if info, err = c.GetJob(cmd.Context(), info.JobID); err != nil {
				return err
			}
		}
		return a.jobResult(info, timeout)
	})
	return cmd
}

// jobResult prints an ended job's output and turns its end into the
// CLI's status: the command's, or 125 with the job's error.
func (a *app) jobResult(info api.JobInfo, timeout time.Duration) error {
	switch {
	case info.Error != nil:
		return fmt.Errorf("job %s is %s after %d attempts: %s: %s", info.JobID, info.State, info.Attempts, info.Error.Code, safetext.Line(info.Error.Message, 512))
	case info.Result == nil:
		return fmt.Errorf("job %s is %s", info.JobID, info.State)
	case info.State == api.JobDead:
		fmt.Fprintf(a.stderr, "hutch: job %s is dead after %d attempts (hutch job dlq); the last one:\n", info.JobID, info.Attempts)
	}
	return a.childResult(*info.Result, timeout)
}

func (a *app) jobGetCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get JOB", Short: "Describe a job as JSON", Args: cobra.ExactArgs(1)}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		info, err := a.client().GetJob(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return printJSON(a.stdout, info)
	})
	return cmd
}

// jobListCmd is `job ls` (sandbox::job::list) or `job dlq`.
func (a *app) jobListCmd(fn string) *cobra.Command {
	var req api.JobListRequest
	cmd := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List your jobs, newest first", Args: cobra.NoArgs}
	if fn == api.FnJobDLQ {
		cmd = &cobra.Command{Use: "dlq", Short: "The dead-letter list: your jobs given up on, with their last error", Args: cobra.NoArgs}
	} else {
		cmd.Flags().StringVar(&req.State, "state", "", "only jobs in this state (queued, running, succeeded, failed, dead, cancelled)")
	}
	cmd.Flags().StringVar(&req.SandboxID, "sandbox", "", "only this sandbox's jobs")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		list, err := a.listJobs(cmd.Context(), fn, req)
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "ID", "STATE", "ATTEMPTS", "SANDBOX", "SUBMITTED", "COMMAND", "ERROR")
		for _, j := range list.Jobs {
			command := strings.Join(append([]string{j.Request.Cmd}, append(j.Request.Args, j.Request.Argv...)...), " ")
			errText := "-"
			if j.Error != nil {
				errText = j.Error.Code + ": " + j.Error.Message
			}
			t.row(j.JobID, j.State, strconv.Itoa(j.Attempts), tagOrDash(j.SandboxID), j.SubmittedAt,
				safetext.Line(strings.TrimSpace(command), 60), safetext.Line(errText, 80))
		}
		return t.flush()
	})
	return cmd
}

func (a *app) listJobs(ctx context.Context, fn string, req api.JobListRequest) (api.JobListResponse, error) {
	if fn == api.FnJobDLQ {
		return a.client().DeadLetters(ctx, req)
	}
	return a.client().ListJobs(ctx, req)
}

// jobEachCmd is `job cancel` or `job retry` of each job named.
func (a *app) jobEachCmd(verb string) *cobra.Command {
	short := "Cancel queued jobs, or kill running ones"
	if verb == "retry" {
		short = "Queue jobs of the dead-letter list again"
	}
	cmd := &cobra.Command{Use: verb + " JOB...", Short: short, Args: cobra.MinimumNArgs(1)}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		c := a.client()
		for _, id := range args {
			var info api.JobInfo
			var err error
			if verb == "retry" {
				info, err = c.RetryJob(cmd.Context(), id)
			} else {
				info, err = c.CancelJob(cmd.Context(), id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s %s\n", info.JobID, info.State)
		}
		return nil
	})
	return cmd
}
