package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// cellFlags are the flags of run-code and repl.
type cellFlags struct {
	language, context, saveDir string
	timeout                    time.Duration
	jsonOut                    bool
}

func (f *cellFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.language, "lang", "l", "", "python (default), javascript or bash: the sandbox's default context of that language")
	fl.StringVar(&f.context, "context", "", "run in this context ('hutch context create' makes one) instead")
	fl.DurationVar(&f.timeout, "timeout", 0, "interrupt a cell after this long")
	fl.StringVar(&f.saveDir, "save-images", "", "write the images a cell returns or displays into this directory")
	fl.BoolVar(&f.jsonOut, "json", false, "print each cell's result as JSON")
}

func (a *app) runCodeCmd() *cobra.Command {
	var f cellFlags
	cmd := &cobra.Command{
		Use:   "run-code ID CODE|-",
		Short: "Run a cell of code in a sandbox's interpreter context, which keeps its state for the next (- reads the code from stdin)",
		Args:  cobra.ExactArgs(2),
	}
	f.register(cmd)
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		code := args[1]
		if code == "-" {
			b, err := io.ReadAll(a.stdin)
			if err != nil {
				return fmt.Errorf("reading the code: %w", err)
			}
			code = string(b)
		}
		res, err := a.runCell(cmd.Context(), a.client(), args[0], f, code)
		if err != nil {
			return err
		}
		if res.Status != "ok" {
			return &exitError{code: exitFailure}
		}
		return nil
	})
	return cmd
}

// runCell runs code, printing its output as it comes and then its
// result.
func (a *app) runCell(ctx context.Context, c *client.Client, id string, f cellFlags, code string) (api.CellResult, error) {
	ms, err := timeoutMs(f.timeout)
	if err != nil {
		return api.CellResult{}, err
	}
	req := api.RunCodeRequest{SandboxID: id, ContextID: f.context, Language: f.language, Code: code, TimeoutMs: ms}
	p := &outputPrinter{stdout: a.stdout, stderr: a.stderr}
	res, err := c.RunCode(ctx, req, p.event)
	if err != nil {
		return res, err
	}
	if f.jsonOut {
		return res, printJSON(a.stdout, res)
	}
	return res, a.printCell(res, f.saveDir)
}

// printCell prints a cell's value (its text), notes its images (or saves
// them), and its error with the traceback on stderr.
func (a *app) printCell(res api.CellResult, saveDir string) error {
	bundles := append([]map[string]any{}, res.Display...)
	if res.Data != nil {
		bundles = append(bundles, res.Data)
		if text, ok := res.Data["text/plain"].(string); ok {
			fmt.Fprintln(a.stdout, text)
		}
	}
	for i, b := range bundles {
		mimes := make([]string, 0, len(b))
		for mime := range b {
			mimes = append(mimes, mime)
		}
		sort.Strings(mimes)
		for _, mime := range mimes {
			if mime != "image/png" && mime != "image/jpeg" {
				continue
			}
			raw, _ := b[mime].(string)
			img, err := base64.StdEncoding.DecodeString(raw)
			if err != nil {
				return fmt.Errorf("decoding the cell's %s: %w", mime, err)
			}
			if saveDir == "" {
				fmt.Fprintf(a.stderr, "hutch: [%s, %d bytes; --save-images DIR writes it]\n", mime, len(img))
				continue
			}
			name := filepath.Join(saveDir, fmt.Sprintf("cell%d-%d.%s", res.ExecutionCount, i+1, strings.TrimPrefix(mime, "image/")))
			if err := os.WriteFile(name, img, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "hutch: [%s written to %s]\n", mime, name)
		}
	}
	if e := res.Error; e != nil {
		for _, line := range e.Traceback {
			fmt.Fprint(a.stderr, safetext.Escape(strings.TrimSuffix(line, "\n"))+"\n")
		}
		if len(e.Traceback) == 0 {
			fmt.Fprintf(a.stderr, "%s: %s\n", safetext.Line(e.Name, 128), safetext.Escape(e.Value))
		}
	}
	if res.TimedOut {
		fmt.Fprintln(a.stderr, "hutch: the cell timed out and was interrupted; the context keeps its state")
	}
	return nil
}

func (a *app) replCmd() *cobra.Command {
	var f cellFlags
	cmd := &cobra.Command{
		Use:   "repl ID",
		Short: "An interactive prompt over a sandbox's interpreter context: each line (or block, ended by an empty line) is a cell",
		Long: `An interactive prompt over a sandbox's interpreter context: each line (or block,
ended by an empty line) is a cell. On a terminal the line is edited as in a
shell (arrows, history, Ctrl-A/E/K/U/W); Ctrl-C interrupts the running cell
(the context keeps its state) or, at the prompt, drops the line or block
typed so far; Ctrl-D on an empty line ends the repl.`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd)
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		if in, ok := a.stdin.(*os.File); ok && in == os.Stdin && a.isTerminal(a.stdin) && a.isTerminal(a.stdout) {
			return a.replTerminal(cmd.Context(), args[0], f)
		}
		in := bufio.NewScanner(a.stdin)
		in.Buffer(make([]byte, 0, 64<<10), 1<<20)
		read := func(prompt string) (string, error) {
			fmt.Fprint(a.stderr, prompt)
			if !in.Scan() {
				fmt.Fprintln(a.stderr)
				return "", cmp.Or(in.Err(), io.EOF)
			}
			return in.Text(), nil
		}
		return a.repl(cmd.Context(), read, func(ctx context.Context, code string) error {
			_, err := a.runCell(ctx, a.client(), args[0], f, code)
			return err
		})
	})
	return cmd
}

// errPromptDropped is a prompt's answer when the user dropped what was typed.
var errPromptDropped = errors.New("the prompt was dropped")

// repl reads cells with read (io.EOF ends it, errPromptDropped drops the
// block typed so far) and runs them with run; a cell's failure is printed
// and the prompt comes back.
func (a *app) repl(ctx context.Context, read func(prompt string) (string, error), run func(context.Context, string) error) error {
	var block []string
	for {
		prompt := ">>> "
		if len(block) > 0 {
			prompt = "... "
		}
		line, err := read(prompt)
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, errPromptDropped):
			block = nil
			continue
		case err != nil:
			return err
		}
		// A line that opens a block (ends with ':', '{', '\' or
		// 'do'/'then') continues until an empty line.
		if len(block) > 0 || opensBlock(line) {
			if line != "" {
				block = append(block, line)
				continue
			}
			line, block = strings.Join(block, "\n"), nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := run(ctx, line); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "hutch: %v\n", err)
		}
	}
}

// replTerminal is repl on this process's terminal: lines edited with
// liner, Ctrl-C at the prompt dropping the line, and SIGINT while a cell
// runs interrupting the cell's context rather than ending the CLI (SIGTERM
// still does).
func (a *app) replTerminal(ctx context.Context, id string, f cellFlags) error {
	// The command's context ends on SIGINT too: the repl takes its own
	// signals, and ends on SIGTERM only.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var mu sync.Mutex
	var interrupt func() // interrupts the running cell; nil between cells
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTERM {
					cancel()
					return
				}
				mu.Lock()
				if interrupt != nil {
					go interrupt()
				}
				mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()

	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	read := func(prompt string) (string, error) {
		if ctx.Err() != nil {
			return "", io.EOF
		}
		s, err := line.Prompt(prompt)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			return "", errPromptDropped
		case err == io.EOF:
			fmt.Fprintln(a.stdout)
		case err == nil && strings.TrimSpace(s) != "":
			line.AppendHistory(s)
		}
		return s, err
	}
	c := a.client()
	run := func(ctx context.Context, code string) error {
		mu.Lock()
		interrupt = func() {
			ictx, icancel := context.WithTimeout(ctx, stopTimeout)
			defer icancel()
			if err := a.interruptCell(ictx, c, id, f); err != nil {
				fmt.Fprintf(a.stderr, "hutch: interrupting the cell: %v\n", err)
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			interrupt = nil
			mu.Unlock()
		}()
		_, err := a.runCell(ctx, c, id, f, code)
		return err
	}
	return a.repl(ctx, read, run)
}

// interruptCell interrupts the cell running in the context of f (--context,
// else the sandbox's default context of --lang).
func (a *app) interruptCell(ctx context.Context, c *client.Client, id string, f cellFlags) error {
	ctxID := f.context
	if ctxID == "" {
		list, err := c.ListContexts(ctx, id)
		if err != nil {
			return err
		}
		lang := cmp.Or(f.language, "python")
		for _, ci := range list.Contexts {
			if ci.Default && ci.Language == lang {
				ctxID = ci.ContextID
			}
		}
		if ctxID == "" {
			return fmt.Errorf("no default %s context in sandbox %s", lang, id)
		}
	}
	_, err := c.Interrupt(ctx, ctxID)
	return err
}

// opensBlock reports whether a line begins a block of several lines.
func opensBlock(line string) bool {
	t := strings.TrimSpace(line)
	for _, end := range []string{":", "{", "\\", "(", "[", " do", " then"} {
		if strings.HasSuffix(t, end) {
			return true
		}
	}
	return false
}

func (a *app) contextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Interpreter contexts of a sandbox: create, ls, restart, interrupt, rm",
		Args:  cobra.NoArgs,
	}
	var req api.ContextCreateRequest
	var env []string
	create := &cobra.Command{Use: "create ID", Short: "Start a context; prints its id", Args: cobra.ExactArgs(1)}
	create.Flags().StringVarP(&req.Language, "lang", "l", "", "python (default), javascript or bash")
	create.Flags().StringVar(&req.Cwd, "cwd", "", "its working directory")
	create.Flags().StringArrayVarP(&env, "env", "e", nil, "set KEY=VALUE in it (repeatable)")
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		req.SandboxID, req.Env = args[0], parseEnv(env)
		info, err := a.client().CreateContext(cmd.Context(), req)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, info.ContextID)
		return nil
	})
	ls := &cobra.Command{Use: "ls ID", Aliases: []string{"list"}, Short: "List a sandbox's contexts", Args: cobra.ExactArgs(1)}
	ls.RunE = action(func(cmd *cobra.Command, args []string) error {
		list, err := a.client().ListContexts(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		t := newTable(a.stdout, "ID", "LANGUAGE", "PID", "STATE", "CELLS", "DEFAULT")
		for _, c := range list.Contexts {
			t.row(c.ContextID, c.Language, fmt.Sprint(c.Pid), c.State, fmt.Sprint(c.ExecutionCount), fmt.Sprint(c.Default))
		}
		return t.flush()
	})
	each := func(use, short string, do func(context.Context, string) (string, error)) *cobra.Command {
		c := &cobra.Command{Use: use + " CONTEXT...", Short: short, Args: cobra.MinimumNArgs(1)}
		c.RunE = action(func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				out, err := do(cmd.Context(), id)
				if err != nil {
					return err
				}
				fmt.Fprintln(a.stdout, out)
			}
			return nil
		})
		return c
	}
	restart := each("restart", "Start contexts afresh (their state is lost)", func(ctx context.Context, id string) (string, error) {
		info, err := a.client().RestartContext(ctx, id)
		return info.ContextID + " " + info.State, err
	})
	interrupt := each("interrupt", "Interrupt the cell running in contexts", func(ctx context.Context, id string) (string, error) {
		res, err := a.client().Interrupt(ctx, id)
		return fmt.Sprintf("%s running=%v", res.ContextID, res.Running), err
	})
	rm := each("rm", "Stop contexts", func(ctx context.Context, id string) (string, error) {
		info, err := a.client().DeleteContext(ctx, id)
		return info.ContextID, err
	})
	cmd.AddCommand(create, ls, restart, interrupt, rm)
	return cmd
}

func (a *app) installCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install ID pip|npm PACKAGE...",
		Short: "Install packages into a sandbox from the daemon's package indexes (the sandbox needs a network); the tool's output as it runs",
		Args:  cobra.MinimumNArgs(3),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		p := &outputPrinter{stdout: a.stdout, stderr: a.stderr}
		res, err := a.client().Install(cmd.Context(), api.InstallRequest{SandboxID: args[0], Manager: args[1], Packages: args[2:]}, p.event)
		if err != nil {
			return err
		}
		return a.childResult(res, 0)
	})
	return cmd
}
