package snapsvc

// Template builds (sandbox::template::build, issue 39). Each stage of the
// Dockerfile runs in a sandbox of the daemon's runtime booted from its
// base image and the layer of its last cached step; each step that
// changes files (RUN, COPY, ADD, WORKDIR) ends with the sandbox's
// writable layer captured (Handle.CaptureLayer) into build/layers/<sha256
// of the tar>.tar, and build/keys/<key>.json maps the step's cache key
// (templatebuild.Key: parent, instruction, state, input digests) to it.
// A rebuild walks the keys and boots no sandbox until a step misses. A
// template keeps the layers of its build; deleting it removes every
// layer no template keeps (gcLayers).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/templatebuild"
)

// buildDir holds the build cache under the checkpoint directory.
const buildDir = "build"

// Bounds of a build.
const (
	stepTimeoutMs     = 30 * 60 * 1000
	buildSandboxSecs  = 2 * 60 * 60
	defaultReadySecs  = 60
	maxTailLines      = 20
	maxChownArgsBatch = 256
)

// builtInfo is what a built template keeps of its build.
type builtInfo struct {
	// Layers are the layers (sha256 hex) of every step of its build.
	Layers   []string `json:"layers"`
	StartCmd []string `json:"start_cmd,omitempty"`
	Workdir  string   `json:"workdir,omitempty"`
	User     string   `json:"user,omitempty"`
	// Snapshot is the snapshot of its start command running, which the
	// template owns; StartKey is what it was taken of (a rebuild that
	// comes to the same key keeps it).
	Snapshot string `json:"snapshot,omitempty"`
	StartKey string `json:"start_key,omitempty"`
}

// cacheEntry is one step's cached result.
type cacheEntry struct {
	Layer   string `json:"layer"`
	ImageID string `json:"image_id"`
}

// stageState is a stage's state as its steps go.
type stageState struct {
	image, imageID string
	layer          string // sha256 hex; "" for the image's files
	key            string
	vars           templatebuild.Vars // ARGs and ENVs, for expansion
	env            []string           // ENVs only
	workdir, user  string
	cmd, entry     []string
	cmdShell       bool
	entryShell     bool
	layers         []string
	box            string // the running build sandbox; "" for none
	// tree, when set, is the layer's shared tree its sandbox boots on
	// (the start command's; trees.go), not the layer's tar.
	tree string
	// start marks the start command's sandbox, which has the template's
	// network, not the RUN steps' egress policy.
	start bool
}

// build is one build in progress.
type build struct {
	s       *Service
	ctx     context.Context
	cancel  context.CancelCauseFunc // with errBuildCancelled by CancelTemplateBuild
	owner   string
	req     api.TemplateBuildRequest
	bctx    *templatebuild.Context
	emit    func(api.TemplateBuildEvent) error
	stages  []*stageState
	names   map[string]int
	args    map[string]string
	steps   int
	cached  int
	stepNo  int
	boxes   []string
	lastOut []string
	// layers are every stage's layers, which the template keeps.
	layers []string
	// log is the end of its log, start when it began (its template's
	// last_build).
	log   *buildLog
	start time.Time
}

// BuildTemplate builds a template from a Dockerfile (sandbox::template::build),
// emitting each step and its output.
func (s *Service) BuildTemplate(ctx context.Context, req api.TemplateBuildRequest, emit func(api.TemplateBuildEvent) error) (api.TemplateBuildResponse, error) {
	start := time.Now()
	if !templateName.MatchString(req.Name) {
		return api.TemplateBuildResponse{}, errdefs.Malformed("template name %q must be 1 to 64 lowercase letters, digits and . _ - (starting with a letter or digit)", spec.Clip(req.Name, 64))
	}
	old, err := s.template(ctx, req.Name)
	if err == nil && old.Built == nil {
		return api.TemplateBuildResponse{}, errdefs.Malformed("you already have a template named %s that was not built from a Dockerfile; delete it first", req.Name)
	}
	plan, err := templatebuild.Parse([]byte(req.Dockerfile))
	if err != nil {
		return api.TemplateBuildResponse{}, err
	}
	var body io.Reader
	if len(req.Context) > 0 {
		body = bytes.NewReader(req.Context)
	}
	bctx, err := templatebuild.LoadContext(body, templatebuild.DefaultMaxContextBytes)
	if err != nil {
		return api.TemplateBuildResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	s.event(owner, api.EventTemplateBuildStarted, map[string]any{"template": req.Name})
	blog := &buildLog{}
	logged := func(ev api.TemplateBuildEvent) error {
		blog.add(ev)
		if ev.Phase == "step" {
			s.event(owner, api.EventTemplateBuildStep, map[string]any{"template": req.Name, "step": ev.Step, "steps": ev.Steps,
				"line": ev.Line, "instruction": ev.Instruction, "cached": ev.Cached})
		}
		return emit(ev)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b := &build{s: s, ctx: ctx, cancel: cancel, owner: owner, req: req, bctx: bctx, emit: logged, names: map[string]int{}, args: req.BuildArgs, log: blog, start: start}
	s.buildMu.Lock()
	if s.builds == nil {
		s.builds = map[*build]struct{}{}
	}
	s.builds[b] = struct{}{}
	s.buildMu.Unlock()
	defer func() {
		s.buildMu.Lock()
		delete(s.builds, b)
		s.buildMu.Unlock()
	}()
	resp, err := b.run(plan, old, start)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errBuildCancelled) {
		err = cause
	}
	if err != nil {
		s.keepFailedBuild(owner, req.Name, b.summary(start, err))
		s.event(owner, api.EventTemplateBuildFailed, map[string]any{"template": req.Name, "step": b.stepNo, "error": errdefs.As(err).Message})
		return resp, err
	}
	s.event(owner, api.EventTemplateBuildDone, map[string]any{"template": req.Name, "steps": resp.Steps, "cached_steps": resp.CachedSteps, "duration_ms": resp.DurationMs})
	return resp, nil
}

// errBuildCancelled ends a build that CancelTemplateBuild cancelled.
var errBuildCancelled = errdefs.Malformed("the build was cancelled (sandbox::template::build::cancel)")

// CancelTemplateBuild cancels the caller's builds of req.Name in progress
// (sandbox::template::build::cancel): each stops at its running step, its
// build sandboxes are stopped and it answers errBuildCancelled; the
// layers of the steps it finished stay cached. S007 when there is none.
func (s *Service) CancelTemplateBuild(ctx context.Context, req api.TemplateBuildCancelRequest) (api.TemplateBuildCancelResponse, error) {
	owner := auth.OwnerFrom(ctx)
	n := 0
	s.buildMu.Lock()
	for b := range s.builds {
		if b.owner == owner && b.req.Name == req.Name {
			b.cancel(errBuildCancelled)
			n++
		}
	}
	s.buildMu.Unlock()
	if n == 0 {
		return api.TemplateBuildCancelResponse{}, errdefs.New(errdefs.CodeNoTemplate, "no build of template %s in progress", spec.Clip(req.Name, 64))
	}
	return api.TemplateBuildCancelResponse{Name: req.Name, Cancelled: n}, nil
}

// run runs the build's stages and records its template.
func (b *build) run(plan *templatebuild.Plan, old *templateRecord, start time.Time) (api.TemplateBuildResponse, error) {
	req := b.req
	last := len(plan.Stages) - 1
	if req.Target != "" {
		i, ok := b.stageIndex(plan, req.Target)
		if !ok {
			return api.TemplateBuildResponse{}, errdefs.Malformed("no stage named %q to target", spec.Clip(req.Target, 64))
		}
		last = i
	}
	for i := 0; i <= last; i++ {
		b.steps += len(plan.Stages[i].Steps)
	}
	defer b.stopBoxes()
	var meta templatebuild.Vars
	for _, a := range plan.MetaArgs {
		for _, kv := range a.Args {
			if v, ok := b.args[kv.Key]; ok {
				meta = meta.Set(kv.Key, v)
			} else if kv.Value != nil {
				meta = meta.Set(kv.Key, *kv.Value)
			}
		}
	}
	if err := b.checkFroms(plan, last, meta); err != nil {
		return api.TemplateBuildResponse{}, err
	}
	for i := 0; i <= last; i++ {
		if err := b.runStage(plan, i, meta); err != nil {
			return api.TemplateBuildResponse{}, err
		}
	}
	rec, err := b.finish(b.stages[last], old)
	if err != nil {
		return api.TemplateBuildResponse{}, err
	}
	_ = b.emit(api.TemplateBuildEvent{Phase: "done", Steps: b.steps, Step: b.steps})
	return api.TemplateBuildResponse{Template: rec.info(), Steps: b.steps, CachedSteps: b.cached, DurationMs: uint64(time.Since(start).Milliseconds())}, nil
}

// checkFroms refuses, before any step runs, a FROM whose base is not an
// earlier stage and that a create could not boot: an image outside the
// catalog and image_allowlist (an OCI reference is admitted when
// image_allowlist lists it), with the FROM's line.
func (b *build) checkFroms(plan *templatebuild.Plan, last int, meta templatebuild.Vars) error {
	for i := 0; i <= last; i++ {
		st := plan.Stages[i]
		from, err := templatebuild.ExpandWord(st.From, meta)
		if err != nil {
			return errdefs.Malformed("Dockerfile line %d: FROM %s: %v", st.Line, spec.Clip(st.From, 64), err)
		}
		if j, ok := b.stageIndex(plan, from); (ok && j < i) || from == "scratch" {
			continue // an earlier stage; scratch is refused where it runs
		}
		err = b.s.core.CheckRequest(api.CreateRequest{Image: from, Network: b.req.Network, CPUs: b.req.CPUs, MemoryMB: b.req.MemoryMB})
		if err != nil {
			e := *errdefs.As(err)
			e.Message = fmt.Sprintf("Dockerfile line %d: FROM %s: %s", st.Line, spec.Clip(from, 128), e.Message)
			return &e
		}
	}
	return nil
}

// stageIndex finds a stage by name or index.
func (b *build) stageIndex(plan *templatebuild.Plan, ref string) (int, bool) {
	for i, st := range plan.Stages {
		if st.Name != "" && strings.EqualFold(st.Name, ref) {
			return i, true
		}
	}
	if n, err := strconv.Atoi(ref); err == nil && n >= 0 && n < len(plan.Stages) {
		return n, true
	}
	return 0, false
}

// stageRef is the earlier stage (before stage before) that ref names, by
// name or index.
func (b *build) stageRef(ref string, before int) (int, bool) {
	if j, ok := b.names[strings.ToLower(ref)]; ok && j < before {
		return j, true
	}
	if n, err := strconv.Atoi(ref); err == nil && n >= 0 && n < before {
		return n, true
	}
	return 0, false
}

// runStage runs stage i's steps.
func (b *build) runStage(plan *templatebuild.Plan, i int, meta templatebuild.Vars) error {
	st := plan.Stages[i]
	from, err := templatebuild.ExpandWord(st.From, meta)
	if err != nil {
		return errdefs.Malformed("Dockerfile line %d: FROM %s: %v", st.Line, spec.Clip(st.From, 64), err)
	}
	ss := &stageState{vars: meta}
	if j, ok := b.stageRef(from, i); ok {
		p := b.stages[j]
		*ss = *p
		ss.box, ss.layers = "", append([]string(nil), p.layers...)
		ss.vars = append(append(templatebuild.Vars(nil), meta...), p.env...)
	} else {
		if from == "scratch" {
			return errdefs.Malformed("Dockerfile line %d: FROM scratch is not supported: a sandbox needs an image", st.Line)
		}
		ss.image, ss.key = from, templatebuild.Key("", "FROM", from)
	}
	if st.Name != "" {
		b.names[strings.ToLower(st.Name)] = i
	}
	b.stages = append(b.stages, ss)
	for _, step := range st.Steps {
		b.stepNo++
		if err := b.runStep(i, ss, step); err != nil {
			return err
		}
	}
	return nil
}

// runStep runs one instruction of a stage.
func (b *build) runStep(stage int, ss *stageState, step templatebuild.Step) error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("build cancelled before line %d: %w", step.Line, err)
	}
	fail := func(format string, a ...any) error {
		return errdefs.Malformed("Dockerfile line %d: %s", step.Line, fmt.Sprintf(format, a...))
	}
	if err := templatebuild.Expand(step.Cmd, ss.vars); err != nil {
		return fail("%v", err)
	}
	ev := api.TemplateBuildEvent{Stage: stage, Step: b.stepNo, Steps: b.steps, Line: step.Line, Instruction: safetext.Line(step.Text, safetext.MaxLine), Phase: "step"}
	config := func() error {
		ss.key = templatebuild.Key(ss.key, step.Text)
		ev.Cached = true
		b.cached++
		return b.emit(ev)
	}
	switch c := step.Cmd.(type) {
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			ss.env = templatebuild.Vars(ss.env).Set(kv.Key, kv.Value)
			ss.vars = ss.vars.Set(kv.Key, kv.Value)
		}
		return config()
	case *instructions.ArgCommand:
		for _, kv := range c.Args {
			v, given := b.args[kv.Key]
			if !given {
				if old, ok := ss.vars.Get(kv.Key); ok {
					v, given = old, true
				} else if kv.Value != nil {
					v, given = *kv.Value, true
				}
			}
			if given {
				ss.vars = ss.vars.Set(kv.Key, v)
				ss.key = templatebuild.Key(ss.key, "ARG", kv.Key, v)
			}
		}
		return config()
	case *instructions.UserCommand:
		ss.user = c.User
		return config()
	case *instructions.CmdCommand:
		ss.cmd, ss.cmdShell = c.CmdLine, c.PrependShell
		return config()
	case *instructions.EntrypointCommand:
		ss.entry, ss.entryShell = c.CmdLine, c.PrependShell
		return config()
	case *instructions.LabelCommand, *instructions.ExposeCommand, *instructions.MaintainerCommand, *instructions.StopSignalCommand:
		return config()
	case *instructions.WorkdirCommand:
		ss.workdir = b.abs(ss, c.Path)
		return b.fsStep(ss, step, ev, []string{"WORKDIR", ss.workdir}, func(box string) error {
			return b.exec(box, ss, []string{"mkdir", "-p", ss.workdir}, "0", "/")
		})
	case *instructions.RunCommand:
		argv := c.CmdLine
		if c.PrependShell {
			argv = []string{"/bin/sh", "-c", strings.Join(c.CmdLine, " ")}
		}
		return b.fsStep(ss, step, ev, append([]string{"RUN"}, argv...), func(box string) error {
			return b.exec(box, ss, argv, ss.user, ss.workdir)
		})
	case *instructions.CopyCommand:
		if c.From != "" {
			return b.copyFrom(ss, step, ev, c)
		}
		return b.copyContext(ss, step, ev, c.SourcePaths, c.DestPath, c.Chown, c.Chmod, false)
	case *instructions.AddCommand:
		return b.add(ss, step, ev, c)
	}
	return fail("%s is not supported", step.Cmd.Name())
}

// abs is p made absolute against the stage's working directory.
func (b *build) abs(ss *stageState, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	wd := ss.workdir
	if wd == "" {
		wd = "/"
	}
	return path.Join(wd, p)
}

// dest is a COPY's destination, absolute, keeping a trailing "/".
func (b *build) dest(ss *stageState, d string) string {
	out := b.abs(ss, d)
	if strings.HasSuffix(d, "/") || d == "." {
		out = strings.TrimSuffix(out, "/") + "/"
	}
	return out
}

// copyContext is a COPY or ADD from the build context.
func (b *build) copyContext(ss *stageState, step templatebuild.Step, ev api.TemplateBuildEvent, srcs []string, dest, chown, chmod string, unpack bool) error {
	opts := templatebuild.CopyOptions{Chmod: chmod, Unpack: unpack}
	cp, err := b.planCopy(step, srcs, b.dest(ss, dest), opts)
	if err != nil {
		return err
	}
	// The key's parent fixes the image, so whether dest is a directory
	// there: the same key always copies the same way.
	return b.fsStep(ss, step, ev, []string{"COPY", cp.Digest, chown}, func(box string) error {
		cp, err := b.replanIntoDir(box, step, srcs, b.dest(ss, dest), opts, cp)
		if err != nil {
			return err
		}
		return b.put(box, bytes.NewReader(cp.Tar), cp.Paths, chown)
	})
}

// planCopy plans a COPY or ADD of srcs of the context to dest.
func (b *build) planCopy(step templatebuild.Step, srcs []string, dest string, opts templatebuild.CopyOptions) (*templatebuild.Copy, error) {
	cp, err := b.bctx.Plan(srcs, dest, opts)
	if err != nil {
		return nil, errdefs.Malformed("Dockerfile line %d: %s", step.Line, errdefs.As(err).Message)
	}
	return cp, nil
}

// replanIntoDir is cp planned anew into dest when dest, given without a
// trailing "/", is a directory of box's image, as Docker copies a file
// into an existing directory.
func (b *build) replanIntoDir(box string, step templatebuild.Step, srcs []string, dest string, opts templatebuild.CopyOptions, cp *templatebuild.Copy) (*templatebuild.Copy, error) {
	into, err := b.intoDir(box, dest)
	if err != nil || into == dest {
		return cp, err
	}
	return b.planCopy(step, srcs, into, opts)
}

// intoDir is dest with a trailing "/" when it names a directory that
// exists in box, else dest.
func (b *build) intoDir(box, dest string) (string, error) {
	if strings.HasSuffix(dest, "/") {
		return dest, nil
	}
	h, release, err := b.s.core.Acquire(b.ctx, box, sandbox.UseCall)
	if err != nil {
		return "", err
	}
	defer release()
	e, err := h.Agent().Stat(b.ctx, &agentv1.FsStatRequest{Path: dest})
	if err != nil || !e.GetIsDir() {
		return dest, nil // missing or not a directory: copied to that name
	}
	return dest + "/", nil
}

// copyFrom is a COPY --from an earlier stage: each source (a path, or a
// glob expanded in that stage's sandbox) is packed there and unpacked at
// the destination. A glob that matches nothing is S001.
func (b *build) copyFrom(ss *stageState, step templatebuild.Step, ev api.TemplateBuildEvent, c *instructions.CopyCommand) error {
	j, ok := b.stageRef(c.From, len(b.stages)-1)
	if !ok {
		return errdefs.Malformed("Dockerfile line %d: COPY --from=%s: no earlier stage of that name (images are not copied from)", step.Line, spec.Clip(c.From, 64))
	}
	src := b.stages[j]
	dest := b.dest(ss, c.DestPath)
	return b.fsStep(ss, step, ev, []string{"COPY --from", src.key, strings.Join(c.SourcePaths, "\x00"), dest, c.Chown, c.Chmod}, func(box string) error {
		if err := b.ensureBox(src); err != nil {
			return err
		}
		for _, p := range c.SourcePaths {
			matches := []templatebuild.Match{{Path: b.abs(src, p)}}
			probe := true // a path's type is found by packing it
			if templatebuild.HasGlob(p) {
				var err error
				if matches, err = b.glob(src.box, b.abs(src, p)); err != nil {
					return err
				}
				if len(matches) == 0 {
					return errdefs.Malformed("Dockerfile line %d: COPY --from=%s: %s matches nothing in that stage", step.Line, spec.Clip(c.From, 64), spec.Clip(p, 128))
				}
				probe = false
			}
			intoDir := len(c.SourcePaths) > 1 || len(matches) > 1
			to, err := b.intoDir(box, dest)
			if err != nil {
				return err
			}
			if err := b.transfer(src.box, matches, probe, box, to, intoDir, c.Chown, c.Chmod); err != nil {
				return err
			}
		}
		return nil
	})
}

// glob expands pattern in sandbox box.
func (b *build) glob(box, pattern string) ([]templatebuild.Match, error) {
	h, release, err := b.s.core.Acquire(b.ctx, box, sandbox.UseCall)
	if err != nil {
		return nil, err
	}
	defer release()
	return templatebuild.Glob(pattern, func(dir string) ([]templatebuild.Match, error) {
		resp, err := h.Agent().Ls(b.ctx, &agentv1.FsLsRequest{Path: dir})
		if err != nil {
			return nil, h.FsFail(b.ctx, "a build's copy --from", err)
		}
		out := make([]templatebuild.Match, 0, len(resp.GetEntries()))
		for _, e := range resp.GetEntries() {
			out = append(out, templatebuild.Match{Path: e.GetName(), Dir: e.GetIsDir()})
		}
		return out, nil
	})
}

// fsStep runs a step that changes files: a cache hit takes its layer,
// a miss runs do in the stage's sandbox and captures the layer.
func (b *build) fsStep(ss *stageState, step templatebuild.Step, ev api.TemplateBuildEvent, inputs []string, do func(box string) error) error {
	key := templatebuild.Key(ss.key, append([]string{step.Text, strings.Join(ss.vars, "\x00"), ss.workdir, ss.user}, inputs...)...)
	if !b.req.NoCache && b.takeCached(ss, key) {
		if ss.box != "" { // the sandbox no longer matches the layers
			b.stopBox(ss)
		}
		ev.Cached = true
		b.cached++
		return b.emit(ev)
	}
	if err := b.emit(ev); err != nil {
		return err
	}
	if err := b.ensureBox(ss); err != nil {
		return err
	}
	b.lastOut = nil
	if err := do(ss.box); err != nil {
		if errdefs.Is(err, errdefs.CodeMalformed) || b.ctx.Err() != nil {
			return err
		}
		msg := fmt.Sprintf("Dockerfile line %d failed: %s: %v", step.Line, safetext.Line(step.Text, safetext.MaxLine), err)
		if len(b.lastOut) > 0 {
			msg += "; last output:\n" + strings.Join(b.lastOut, "\n")
		}
		return errdefs.New(errdefs.CodeMalformed, "%s", msg)
	}
	// Captured and counted as the build's under buildMu: gcLayers never
	// sees the layer unkept.
	b.s.buildMu.Lock()
	defer b.s.buildMu.Unlock()
	sha, err := b.s.captureStep(b.ctx, ss.box)
	if err != nil {
		return err
	}
	if err := b.s.remember(key, cacheEntry{Layer: sha, ImageID: ss.imageID}); err != nil {
		return err
	}
	ss.key, ss.layer = key, sha
	ss.layers = append(ss.layers, sha)
	b.layers = append(b.layers, sha)
	return nil
}

// takeCached takes key's cached layer for the stage, when there is one
// of its image, counting it as the build's (under buildMu, so that
// gcLayers does not remove it meanwhile).
func (b *build) takeCached(ss *stageState, key string) bool {
	b.s.buildMu.Lock()
	defer b.s.buildMu.Unlock()
	e, ok := b.s.cached(key)
	if !ok || (ss.imageID != "" && ss.imageID != e.ImageID) {
		return false
	}
	ss.key, ss.layer, ss.imageID = key, e.Layer, e.ImageID
	ss.layers = append(ss.layers, e.Layer)
	b.layers = append(b.layers, e.Layer)
	return true
}

// ensureBox boots the stage's sandbox on its image and layer, if it has
// none running.
func (b *build) ensureBox(ss *stageState) error {
	if ss.box != "" {
		return nil
	}
	req := api.CreateRequest{Image: ss.image, Network: b.req.Network, CPUs: b.req.CPUs, MemoryMB: b.req.MemoryMB,
		TimeoutSecs: buildSandboxSecs, Metadata: map[string]string{"hutch.template.build": b.req.Name}}
	if !ss.start && !b.req.Egress.Empty() {
		req.Network, req.Egress = true, b.req.Egress
	}
	var from *sandbox.Origin
	if ss.layer != "" {
		from = &sandbox.Origin{Layer: b.s.layerPath(ss.layer), ImageID: ss.imageID}
		if ss.tree != "" {
			from.Layer = ss.tree
		}
	}
	resp, err := b.s.core.CreateFrom(b.ctx, req, from)
	if err != nil {
		return err
	}
	ss.box = resp.SandboxID
	b.boxes = append(b.boxes, resp.SandboxID)
	if ss.imageID == "" {
		h, release, err := b.s.core.Acquire(b.ctx, ss.box, sandbox.UseRead)
		if err != nil {
			return err
		}
		_, o := h.Copy()
		release()
		ss.imageID = o.ImageID
	}
	return nil
}

// stopBox stops the stage's sandbox.
func (b *build) stopBox(ss *stageState) {
	if _, err := b.s.core.Stop(context.WithoutCancel(b.ctx), api.StopRequest{SandboxID: ss.box}); err != nil {
		b.s.log.Warn("stopping a build sandbox", "sandbox", ss.box, "err", err)
	}
	ss.box = ""
}

// stopBoxes stops every sandbox the build started.
func (b *build) stopBoxes() {
	for _, id := range b.boxes {
		_, _ = b.s.core.Stop(context.WithoutCancel(b.ctx), api.StopRequest{SandboxID: id})
	}
}

// exec runs argv in box as user in workdir, streaming its output as
// build events; a non-zero exit is an error.
func (b *build) exec(box string, ss *stageState, argv []string, user, workdir string) error {
	h, release, err := b.s.core.Acquire(b.ctx, box, sandbox.UseExec)
	if err != nil {
		return err
	}
	defer release()
	if user, err = b.resolveUser(h, user); err != nil {
		return err
	}
	// A RUN sees the stage's ARGs and ENVs in its environment.
	areq, err := h.ExecRequest(sandbox.ExecCall{Argv: argv, Env: ss.vars, Workdir: workdir, User: user, TimeoutMs: stepTimeoutMs})
	if err != nil {
		return err
	}
	events, err := h.Agent().Start(b.ctx, &agentv1.StartRequest{Exec: areq, Tied: true, Lossless: true})
	if err != nil {
		return h.Fail(b.ctx, "a build step", err)
	}
	defer events.Close()
	var partial [2][]byte
	for {
		ev, err := events.Recv()
		if err == io.EOF {
			return errors.New("the step's process stream ended")
		}
		if err != nil {
			if b.ctx.Err() != nil {
				return fmt.Errorf("build cancelled: %w", b.ctx.Err())
			}
			return h.Fail(b.ctx, "a build step", err)
		}
		if o := ev.GetOutput(); o != nil {
			s := 0
			if o.GetStream() == agentv1.Stream_STREAM_STDERR {
				s = 1
			}
			partial[s] = append(partial[s], o.GetData()...)
			for {
				i := bytes.IndexByte(partial[s], '\n')
				if i < 0 {
					break
				}
				b.outputLine(string(partial[s][:i]))
				partial[s] = partial[s][i+1:]
			}
			if len(partial[s]) > 4096 {
				b.outputLine(string(partial[s]))
				partial[s] = nil
			}
		}
		if x := ev.GetExited(); x != nil {
			for _, p := range partial {
				if len(p) > 0 {
					b.outputLine(string(p))
				}
			}
			switch {
			case x.GetTimedOut():
				return fmt.Errorf("timed out after %d ms", stepTimeoutMs)
			case x.GetExitCode() != 0:
				return fmt.Errorf("exit code %d", x.GetExitCode())
			}
			return nil
		}
	}
}

// resolveUser is user (a USER's value) as uid:gid, looked up in the
// sandbox's own account files (an earlier RUN may have added it; the
// image's are not enough). A numeric or empty user is as given.
func (b *build) resolveUser(h sandbox.Handle, user string) (string, error) {
	name, group, _ := strings.Cut(user, ":")
	if user == "" || (isNumeric(name) && (group == "" || isNumeric(group))) {
		return user, nil
	}
	id := func(flag, who string) (string, error) {
		areq, err := h.ExecRequest(sandbox.ExecCall{Argv: []string{"id", flag, who}, User: "0", TimeoutMs: 10_000})
		if err != nil {
			return "", err
		}
		resp, err := h.Agent().Exec(b.ctx, areq)
		if err != nil {
			return "", h.Fail(b.ctx, "resolving a USER", err)
		}
		out := strings.TrimSpace(string(resp.GetStdout()))
		if resp.GetExitCode() != 0 || !isNumeric(out) {
			return "", errdefs.Malformed("USER %s: no such user in the image", spec.Clip(who, 64))
		}
		return out, nil
	}
	uid, err := id("-u", name)
	if err != nil {
		return "", err
	}
	gid := group
	if group == "" {
		gid, err = id("-g", name)
	} else if !isNumeric(group) {
		gid, err = b.groupID(h, group)
	}
	if err != nil {
		return "", err
	}
	return uid + ":" + gid, nil
}

// groupID is a group's gid in the sandbox.
func (b *build) groupID(h sandbox.Handle, group string) (string, error) {
	areq, err := h.ExecRequest(sandbox.ExecCall{Argv: []string{"getent", "group", group}, User: "0", TimeoutMs: 10_000})
	if err != nil {
		return "", err
	}
	resp, err := h.Agent().Exec(b.ctx, areq)
	if err != nil {
		return "", h.Fail(b.ctx, "resolving a USER's group", err)
	}
	f := strings.Split(strings.TrimSpace(string(resp.GetStdout())), ":")
	if resp.GetExitCode() != 0 || len(f) < 3 || !isNumeric(f[2]) {
		return "", errdefs.Malformed("USER ...:%s: no such group in the image", spec.Clip(group, 64))
	}
	return f[2], nil
}

func isNumeric(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// outputLine emits one line of a step's output and keeps the last ones.
func (b *build) outputLine(line string) {
	line = safetext.Line(strings.TrimRight(line, "\r"), safetext.MaxLine)
	b.lastOut = append(b.lastOut, line)
	if len(b.lastOut) > maxTailLines {
		b.lastOut = b.lastOut[1:]
	}
	_ = b.emit(api.TemplateBuildEvent{Step: b.stepNo, Steps: b.steps, Output: line, Phase: "output"})
}

// put unpacks a tar at box's root, then gives what it made to chown.
func (b *build) put(box string, tr io.Reader, paths []string, chown string) error {
	h, release, err := b.s.core.Acquire(b.ctx, box, sandbox.UseCall)
	if err != nil {
		return err
	}
	if _, err := h.Agent().Unpack(b.ctx, &agentv1.FsUnpackHeader{Path: "/"}, tr, h.Touch); err != nil {
		err = h.FsFail(b.ctx, "a build's copy", err)
		release()
		return err
	}
	release()
	return b.chown(box, paths, chown)
}

// chown runs chown as root on paths of box.
func (b *build) chown(box string, paths []string, owner string) error {
	if owner == "" || len(paths) == 0 {
		return nil
	}
	for len(paths) > 0 {
		n := min(len(paths), maxChownArgsBatch)
		argv := append([]string{"chown", "-h", "--", owner}, paths[:n]...)
		if err := b.exec(box, &stageState{}, argv, "0", "/"); err != nil {
			return fmt.Errorf("--chown=%s: %w", owner, err)
		}
		paths = paths[n:]
	}
	return nil
}

// transfer copies matches, paths of sandbox from, to dest of sandbox
// to: a directory's content into dest; a file into dest (by its name)
// when intoDir or dest ends in "/", else to dest. Files of one directory
// go in one pack of it. With probe, a match not known as a directory is
// packed as one first.
func (b *build) transfer(from string, matches []templatebuild.Match, probe bool, to, dest string, intoDir bool, chown, chmod string) error {
	h, release, err := b.s.core.Acquire(b.ctx, from, sandbox.UseCall)
	if err != nil {
		return err
	}
	defer release()
	dirTarget := strings.TrimSuffix(dest, "/")
	if dirTarget == "" {
		dirTarget = "/"
	}
	files := map[string]map[string]string{} // directory → file name → target
	var dirs []string
	for _, m := range matches {
		if m.Dir || probe {
			err := b.packInto(h, m.Path, templatebuild.Under(dirTarget), to, chown, chmod)
			if err == nil || m.Dir || !errdefs.Is(err, errdefs.CodeFSWrongType) {
				if err != nil {
					return err
				}
				continue
			}
		}
		target := dirTarget
		if intoDir || strings.HasSuffix(dest, "/") {
			target = path.Join(dest, path.Base(m.Path))
		}
		dir := path.Dir(m.Path)
		if files[dir] == nil {
			files[dir] = map[string]string{}
			dirs = append(dirs, dir)
		}
		files[dir][path.Base(m.Path)] = target
	}
	for _, dir := range dirs {
		if err := b.packInto(h, dir, templatebuild.Picked(files[dir]), to, chown, chmod); err != nil {
			return err
		}
	}
	return nil
}

// packInto packs dir of h's sandbox and unpacks its entries in sandbox
// to where place puts them, then gives them to chown. A dir that is not
// a directory is S212.
func (b *build) packInto(h sandbox.Handle, dir string, place func(string) (string, bool), to, chown, chmod string) error {
	_, rc, err := h.Agent().Pack(b.ctx, &agentv1.FsPackRequest{Path: dir})
	if err != nil {
		return h.FsFail(b.ctx, "a build's copy --from", err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	var paths []string
	go func() {
		pw.CloseWithError(templatebuild.Rebase(rc, pw, place, chmod, &paths))
	}()
	if err := b.put(to, pr, nil, ""); err != nil {
		pr.CloseWithError(err)
		return err
	}
	return b.chown(to, paths, chown)
}

// finish records the built template of the last stage, after booting its
// start command and snapshotting it running, when it has one.
func (b *build) finish(ss *stageState, old *templateRecord) (*templateRecord, error) {
	s := b.s
	rec := &templateRecord{Name: b.req.Name, Owner: auth.OwnerFrom(b.ctx), CreatedAt: time.Now().UTC(), ImageID: ss.imageID,
		Defaults: api.TemplateDefaults{Image: ss.image, CPUs: b.req.CPUs, MemoryMB: b.req.MemoryMB, Network: b.req.Network, Env: api.Env(ss.env)},
		Built:    &builtInfo{Layers: b.layers, Workdir: ss.workdir, User: ss.user, StartCmd: startCmd(ss, b.req.StartCmd)}}
	if ss.layer != "" {
		rec.Layer = filepath.Join(buildDir, "layers", ss.layer+".tar")
		if fi, err := os.Stat(s.path(rec.Layer)); err == nil {
			rec.LayerBytes = fi.Size()
		}
	}
	// "shared-tree": a snapshot of a sandbox on the layer's tar (before
	// trees.go) is not reused, its restore would not match.
	rec.Built.StartKey = templatebuild.Key(ss.layer, append([]string{"shared-tree", ss.image, ss.imageID, ss.workdir, ss.user, strings.Join(ss.env, "\x00"),
		b.req.ReadyCmd, fmt.Sprint(b.req.ReadyPort, b.req.CPUs, b.req.MemoryMB, b.req.Network)}, rec.Built.StartCmd...)...)
	switch {
	case len(rec.Built.StartCmd) == 0:
	case old != nil && old.Built != nil && old.Built.Snapshot != "" && old.Built.StartKey == rec.Built.StartKey && !b.req.NoCache && b.s.hasSnapshot(b.ctx, old.Built.Snapshot):
		// The same files and start command: its snapshot serves again.
		rec.Built.Snapshot, rec.Built.User, rec.Defaults.SnapshotID = old.Built.Snapshot, old.Built.User, old.Built.Snapshot
		_ = b.emit(api.TemplateBuildEvent{Step: b.steps, Steps: b.steps, Phase: "start", Cached: true, Output: strings.Join(rec.Built.StartCmd, " ")})
	default:
		var tree string
		if rec.Layer != "" {
			var err error
			if tree, err = s.ensureTree(rec.Layer); err != nil {
				return nil, err
			}
		}
		if err := b.snapshotRunning(ss, rec, tree); err != nil {
			return nil, err
		}
	}
	rec.LastBuild = b.summary(b.start, nil)
	failpoint.Hit("template.build.before-record")
	s.mu.Lock()
	err := s.templates.Put(rec.key(), rec)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if old != nil && old.Built != nil && old.Built.Snapshot != "" && old.Built.Snapshot != rec.Built.Snapshot {
		s.dropSnapshot(b.ctx, old.Built.Snapshot)
	}
	s.gcLayers()
	return rec, nil
}

// startCmd is the template's start command: override (run by a shell),
// else ENTRYPOINT then CMD as docker joins them.
func startCmd(ss *stageState, override string) []string {
	if override != "" {
		return []string{"/bin/sh", "-c", override}
	}
	shellForm := func(words []string) []string { return []string{"/bin/sh", "-c", strings.Join(words, " ")} }
	switch {
	case len(ss.entry) > 0 && ss.entryShell:
		return shellForm(ss.entry)
	case len(ss.entry) > 0:
		return append(append([]string(nil), ss.entry...), ss.cmd...)
	case len(ss.cmd) > 0 && ss.cmdShell:
		return shellForm(ss.cmd)
	}
	return ss.cmd
}
