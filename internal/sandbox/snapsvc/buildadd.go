package snapsvc

// ADD of a URL (issue 39): the file is fetched on the host before the
// step's cache lookup, its connections made under the build's egress
// policy (egressproxy.Proxy.Dial: its allow and deny rules, the ranges
// closed to sandboxes), and its digest and time enter the step's key.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/templatebuild"
)

// add is an ADD: its URL sources fetched, the others from the build
// context (a local tar unpacks unless --unpack=false; a fetched one only
// with --unpack=true, as buildkit does).
func (b *build) add(ss *stageState, step templatebuild.Step, ev api.TemplateBuildEvent, c *instructions.AddCommand) error {
	if len(c.SourcePaths) == 1 {
		if ref, ok, _ := templatebuild.ParseGit(c.SourcePaths[0]); ok {
			return b.addGit(ss, step, ev, c, ref)
		}
	}
	var local, urls []string
	for _, src := range c.SourcePaths {
		if templatebuild.IsURL(src) {
			urls = append(urls, src)
		} else {
			local = append(local, src)
		}
	}
	unpackLocal := c.Unpack == nil || *c.Unpack
	if len(urls) == 0 {
		return b.copyContext(ss, step, ev, c.SourcePaths, c.DestPath, c.Chown, c.Chmod, unpackLocal)
	}
	fail := func(err error) error { return stepFailed(step, err) }
	if c.Checksum != "" && len(c.SourcePaths) != 1 {
		return fail(errors.New("ADD --checksum takes one http or https URL as its source"))
	}
	dest := b.dest(ss, c.DestPath)
	if len(c.SourcePaths) > 1 && !strings.HasSuffix(dest, "/") {
		dest += "/"
	}
	dir, err := b.s.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	remotes, err := b.fetch(dir, urls, c.Checksum)
	if err != nil {
		return fail(err)
	}
	inputs := []string{"ADD", c.Chown, c.Chmod, dest}
	var cp *templatebuild.Copy
	localOpts := templatebuild.CopyOptions{Chmod: c.Chmod, Unpack: unpackLocal}
	if len(local) > 0 {
		if cp, err = b.planCopy(step, local, dest, localOpts); err != nil {
			return err
		}
		inputs = append(inputs, cp.Digest)
	}
	unpackRemote := c.Unpack != nil && *c.Unpack
	for _, r := range remotes {
		inputs = append(inputs, r.URL, r.Digest, r.ModTime.UTC().Format(time.RFC3339Nano), strconv.FormatBool(unpackRemote))
	}
	return b.fsStep(ss, step, ev, inputs, func(box string) error {
		into, err := b.intoDir(box, dest)
		if err != nil {
			return err
		}
		if cp != nil {
			if into != dest {
				if cp, err = b.planCopy(step, local, into, localOpts); err != nil {
					return err
				}
			}
			if err := b.put(box, bytes.NewReader(cp.Tar), cp.Paths, c.Chown); err != nil {
				return err
			}
		}
		for _, r := range remotes {
			pr, pw := io.Pipe()
			var paths []string
			go func() {
				pw.CloseWithError(templatebuild.PackRemote(pw, r, into, templatebuild.CopyOptions{Chmod: c.Chmod, Unpack: unpackRemote}, &paths))
			}()
			if err := b.put(box, pr, nil, ""); err != nil {
				pr.CloseWithError(err)
				return err
			}
			if err := b.chown(box, paths, c.Chown); err != nil {
				return err
			}
		}
		return nil
	})
}

// stepFailed is err as an S001 saying the step's line, once.
func stepFailed(step templatebuild.Step, err error) error {
	if e := errdefs.As(err); e.Code == errdefs.CodeMalformed && strings.HasPrefix(e.Message, "Dockerfile line") {
		return err
	}
	return errdefs.Malformed("Dockerfile line %d failed: %s: %s", step.Line, safetext.Line(step.Text, safetext.MaxLine), errdefs.As(err).Message)
}

// fetch fetches urls into dir under the build's egress policy.
func (b *build) fetch(dir string, urls []string, checksum string) ([]*templatebuild.Remote, error) {
	f, err := b.fetcher(dir)
	if err != nil {
		return nil, err
	}
	var out []*templatebuild.Remote
	for _, u := range urls {
		r, err := f.Fetch(b.ctx, u, checksum)
		if err != nil {
			for _, r := range out {
				r.Close()
			}
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// fetcher fetches into dir, its connections made under the build's
// egress policy; an ADD of a URL or a git repository needs the build's
// network (network, or an egress policy).
func (b *build) fetcher(dir string) (templatebuild.Fetcher, error) {
	if b.s.dial == nil {
		return templatebuild.Fetcher{}, errors.New("ADD of a URL is not available on this daemon")
	}
	if !b.req.Network && b.req.Egress.Empty() {
		return templatebuild.Fetcher{}, errors.New("ADD of a URL needs the build's network: give the build network, or an egress policy (--allow-out)")
	}
	policy, err := egress.Compile(b.req.Egress)
	if err != nil {
		return templatebuild.Fetcher{}, err
	}
	sb := egressproxy.Sandbox{ID: "template-build:" + b.req.Name, Owner: b.owner, Policy: policy}
	return templatebuild.Fetcher{Dir: dir, Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", port, err)
		}
		return b.s.dial(ctx, sb, host, uint16(p))
	}}, nil
}
