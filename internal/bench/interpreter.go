package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// interpCell times a `1 + 1` cell in a warm Python context and, in the
// same sandbox and rounds (a cell, then an exec), `python3 -c
// 'print(1+1)'` through exec: what a context saves over a fresh
// interpreter.
func interpCell(ctx context.Context, e *env) (Result, error) {
	var cells, execs []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		info, err := e.c.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id, Language: "python"})
		if err != nil {
			return err
		}
		cell := func() (time.Duration, error) {
			start := time.Now()
			res, err := e.c.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "1 + 1"}, nil)
			if err == nil && res.Data["text/plain"] != "2" {
				err = fmt.Errorf("the cell answered %+v", res)
			}
			return time.Since(start), err
		}
		for i := range e.opts.Warmup + e.opts.Runs {
			c, err := cell()
			if err != nil {
				return err
			}
			start := time.Now()
			if err := httpExec(ctx, e, id, "python3", "-c", "print(1+1)"); err != nil {
				return err
			}
			x := time.Since(start)
			if i >= e.opts.Warmup {
				cells, execs = append(cells, c), append(execs, x)
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res := latencyResult(cells)
	base := latencyResult(execs)
	base.Name, base.Title = "exec-python-print", "python3 -c 'print(1+1)' through exec, same rounds"
	res.Baselines = []Result{base}
	res.Note = fmt.Sprintf("the cell is %.1f× faster than a fresh interpreter through exec (p50 %.2f vs %.2f ms)",
		float64(base.Latency.P50)/float64(res.Latency.P50), ms(res.Latency.P50), ms(base.Latency.P50))
	return res, nil
}

// contextCreate times a Python context's create until its first cell
// (`pass`) has answered, in a running sandbox; each is deleted after.
func contextCreate(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		var err error
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			info, err := e.c.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id, Language: "python"})
			if err != nil {
				return 0, err
			}
			if _, err := e.c.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "pass"}, nil); err != nil {
				return 0, err
			}
			d := time.Since(start)
			_, err = e.c.DeleteContext(ctx, info.ContextID)
			return d, err
		})
		return err
	})
	return latencyResult(samples), err
}
