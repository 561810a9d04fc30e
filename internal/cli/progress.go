package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// create runs sandbox::create while showing image build progress. When no
// daemon answers and $HUTCH_URL allows it, it starts one first. took is the
// duration of the create call itself.
func (a *app) create(ctx context.Context, c *client.Client, req api.CreateRequest) (sb api.CreateResponse, took time.Duration, err error) {
	start := time.Now()
	sb, err = a.createShowingProgress(ctx, c, req)
	if err != nil && client.IsUnreachable(err) && autoStartable(c.URL()) {
		if err := a.autoStart(ctx, c); err != nil {
			return sb, 0, err
		}
		start = time.Now()
		sb, err = a.createShowingProgress(ctx, c, req)
	}
	if err == nil && len(sb.UnforwardedPorts) > 0 {
		fmt.Fprintf(a.stderr, "hutch: host ports %v named in env are not forwarded to the sandbox (the daemon's forwardable_ports); their URLs were left as they are\n", sb.UnforwardedPorts)
	}
	return sb, time.Since(start), err
}

// createShowingProgress runs the create showing its image's build or pull.
func (a *app) createShowingProgress(ctx context.Context, c *client.Client, req api.CreateRequest) (sb api.CreateResponse, err error) {
	err = a.showingProgress(ctx, c, req.Image, func() error {
		sb, err = c.Create(ctx, req)
		return err
	})
	return sb, err
}

// showingProgress polls image's status while call is in flight and shows
// a build or pull that takes a while.
func (a *app) showingProgress(ctx context.Context, c *client.Client, image string, call func() error) error {
	p := &progress{w: a.stderr, tty: a.isTerminal(a.stderr), image: image}
	pollCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.poll(pollCtx, c, a.pollInterval)
	}()
	err := call()
	cancel()
	<-done
	p.finish(err == nil, time.Now())
	return err
}

// progress shows one image build or pull on w: on a terminal one line
// rewritten in place, elsewhere one line when it starts and one when done.
// Only one goroutine uses it at a time.
type progress struct {
	w     io.Writer
	tty   bool
	image string

	verb   string    // "building" or "pulling"; "" until one is seen
	origin time.Time // when the build began, by the daemon's account
	done   bool      // the last line is out
}

// poll asks for the image's status every interval until ctx ends or the
// image is ready. Errors are skipped: an unknown image is the create's to
// report.
func (p *progress) poll(ctx context.Context, c *client.Client, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !p.done {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st, err := c.ImageStatus(ctx, p.image); err == nil && ctx.Err() == nil {
			p.update(st, time.Now())
		}
	}
}

func (p *progress) update(st api.ImageStatus, now time.Time) {
	switch st.State {
	case "building", "pulling":
		if p.verb == "" {
			p.verb = st.State
			p.origin = now.Add(-time.Duration(st.ElapsedSecs * float64(time.Second)))
			if !p.tty {
				fmt.Fprintf(p.w, "%s image %s…\n", p.verb, p.image)
			}
		}
		if p.tty {
			fmt.Fprintf(p.w, "\r\x1b[K%s image %s… %s%s", p.verb, p.image, p.elapsed(now), detail(st.Detail))
		}
	case "ready":
		p.finish(true, now)
	}
}

// finish ends the display: a done line after success, a cleared line
// before the error otherwise.
func (p *progress) finish(ok bool, now time.Time) {
	if p.verb == "" || p.done {
		return
	}
	p.done = true
	prefix := ""
	if p.tty {
		prefix = "\r\x1b[K"
	}
	if !ok {
		io.WriteString(p.w, prefix)
		return
	}
	fmt.Fprintf(p.w, "%s%s image %s… done in %s\n", prefix, p.verb, p.image, p.elapsed(now))
}

// detail is a progress line as the end of the terminal line: short, and
// only printable characters (it comes from the build's output).
func detail(line string) string {
	line = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, line)
	if line == "" {
		return ""
	}
	if r := []rune(line); len(r) > 50 {
		line = string(r[:49]) + "…"
	}
	return "  " + line
}

func (p *progress) elapsed(now time.Time) string {
	return fmt.Sprintf("%ds", int(now.Sub(p.origin).Round(time.Second).Seconds()))
}
