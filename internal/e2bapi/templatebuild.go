package e2bapi

// E2B's Template SDK build routes (issue 39), over sandbox::template::build:
//
//	POST /v3/templates                                 a build requested: its template and build ids
//	GET  /templates/{templateID}/files/{hash}          a COPY's files: present, or a link to upload them to
//	PUT  /e2b-template-files/{templateID}/{hash}       that link, signed (the SDK sends no key there)
//	POST /v2/templates/{templateID}/builds/{buildID}   the build's steps: started in the background
//	GET  /templates/{templateID}/builds/{buildID}/status  its state and its log from logsOffset
//
// The steps become a Dockerfile (fromImage, RUN, COPY, ENV, WORKDIR,
// USER) and the uploaded files its context; the template is named by the
// build's name, which Sandbox.create then finds (resolveTemplate).

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Bounds of the template build routes.
const (
	kindUpload         = "template-upload"
	maxUploadBytes     = 256 << 20
	maxUploadsPerOwner = 64
	maxUploadedBytes   = 512 << 20 // an owner's uploads together
	maxBuildLogLines   = 10_000
	maxBuildSteps      = 500
)

// e2bBuild is one build requested through the SDK.
type e2bBuild struct {
	owner, name, id string
	cpus, memoryMB  uint32

	mu      sync.Mutex
	status  string // waiting, building, ready, error
	logs    []logEntry
	reason  string
	started bool
}

type logEntry struct {
	Timestamp string `json:"timestamp"`
	Level     string `json:"level"`
	Message   string `json:"message"`
}

// templateBuilds are the builds and uploads of a Transport.
type templateBuilds struct {
	mu     sync.Mutex
	builds map[string]*e2bBuild         // by build id
	files  map[string]map[string][]byte // owner → files hash → tar
}

var buildsOf sync.Map // *Transport → *templateBuilds

func (tr *Transport) templateBuilds() *templateBuilds {
	b, _ := buildsOf.LoadOrStore(tr, &templateBuilds{builds: map[string]*e2bBuild{}, files: map[string]map[string][]byte{}})
	return b.(*templateBuilds)
}

// templateBuildRoutes adds the build routes to the control plane.
func (tr *Transport) templateBuildRoutes() {
	for pattern, h := range map[string]controlFunc{
		"POST /v3/templates":                                  tr.requestBuild,
		"GET /templates/{templateID}/files/{hash}":            tr.uploadLink,
		"POST /v2/templates/{templateID}/builds/{buildID}":    tr.startBuild,
		"GET /templates/{templateID}/builds/{buildID}/status": tr.buildStatus,
	} {
		tr.control.Handle(pattern, tr.serve(h))
	}
	tr.control.Handle("PUT /e2b-template-files/{templateID}/{hash}", http.HandlerFunc(tr.upload))
}

// templateNameOf is a build name ("name" or "name:tag") as a hutch
// template's name.
func templateNameOf(name string) string {
	n, _, _ := strings.Cut(name, ":")
	return n
}

func (tr *Transport) requestBuild(ctx context.Context, _ *http.Request, body []byte) (answer, error) {
	var in struct {
		Name     string   `json:"name"`
		Alias    string   `json:"alias"`
		Tags     []string `json:"tags"`
		CPUCount uint32   `json:"cpuCount"`
		MemoryMB uint32   `json:"memoryMB"`
	}
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	name := templateNameOf(cmpOr(in.Name, in.Alias))
	if name == "" {
		return answer{}, errdefs.Malformed("a template build needs a name")
	}
	b := &e2bBuild{owner: auth.OwnerFrom(ctx), name: name, id: uuid.NewString(), cpus: in.CPUCount, memoryMB: in.MemoryMB, status: "waiting"}
	tb := tr.templateBuilds()
	tb.mu.Lock()
	tb.builds[b.id] = b
	tb.mu.Unlock()
	return answer{status: http.StatusAccepted, body: map[string]any{"templateID": name, "buildID": b.id, "names": []string{name},
		"aliases": []string{name}, "tags": []string{}, "public": false}}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// build is the caller's build of id for templateID (S002 for none).
func (tr *Transport) build(ctx context.Context, templateID, id string) (*e2bBuild, error) {
	tb := tr.templateBuilds()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	b, ok := tb.builds[id]
	if !ok || b.owner != auth.OwnerFrom(ctx) || b.name != templateID {
		return nil, fail(http.StatusNotFound, "no build "+spec.Clip(id, 64)+" of template "+spec.Clip(templateID, 64))
	}
	return b, nil
}

func (tr *Transport) uploadLink(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	templateID, hash := r.PathValue("templateID"), r.PathValue("hash")
	owner := auth.OwnerFrom(ctx)
	tb := tr.templateBuilds()
	tb.mu.Lock()
	_, present := tb.files[owner][hash]
	tb.mu.Unlock()
	if present {
		return answer{status: http.StatusCreated, body: map[string]any{"present": true}}, nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u := fmt.Sprintf("%s://%s/e2b-template-files/%s/%s?token=%s", scheme, r.Host, templateID, hash, tr.opts.Signer.Token(kindUpload, owner, templateID+"/"+hash))
	return answer{status: http.StatusCreated, body: map[string]any{"present": false, "url": u}}, nil
}

// upload keeps a COPY's files (a tar, maybe gzipped) under their hash
// for the owner the link was signed for.
func (tr *Transport) upload(w http.ResponseWriter, r *http.Request) {
	templateID, hash := r.PathValue("templateID"), r.PathValue("hash")
	owner, err := tr.opts.Signer.Owner(r.URL.Query().Get("token"), templateID+"/"+hash, kindUpload)
	if err != nil {
		writeError(w, fail(http.StatusForbidden, "this upload link is not valid"))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUploadBytes))
	if err != nil {
		writeError(w, errdefs.Malformed("reading the upload (at most %d MiB): %v", maxUploadBytes>>20, err))
		return
	}
	tb := tr.templateBuilds()
	tb.mu.Lock()
	if tb.files[owner] == nil {
		tb.files[owner] = map[string][]byte{}
	}
	// Uploads are a cache: others are forgotten to make room.
	used := int64(len(data))
	for _, f := range tb.files[owner] {
		used += int64(len(f))
	}
	for k, f := range tb.files[owner] {
		if len(tb.files[owner]) < maxUploadsPerOwner && used <= maxUploadedBytes {
			break
		}
		used -= int64(len(f))
		delete(tb.files[owner], k)
	}
	tb.files[owner][hash] = data
	tb.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// e2bStep is one step of the SDK's template.
type e2bStep struct {
	Type      string   `json:"type"`
	Args      []string `json:"args"`
	FilesHash string   `json:"filesHash"`
	Force     bool     `json:"force"`
}

func (tr *Transport) startBuild(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	b, err := tr.build(ctx, r.PathValue("templateID"), r.PathValue("buildID"))
	if err != nil {
		return answer{}, err
	}
	var in struct {
		FromImage         string          `json:"fromImage"`
		FromTemplate      string          `json:"fromTemplate"`
		FromImageRegistry json.RawMessage `json:"fromImageRegistry"`
		StartCmd          string          `json:"startCmd"`
		ReadyCmd          string          `json:"readyCmd"`
		Steps             []e2bStep       `json:"steps"`
		Force             bool            `json:"force"`
	}
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	if in.FromTemplate != "" || len(in.FromImageRegistry) > 0 && string(in.FromImageRegistry) != "null" {
		return answer{}, errdefs.Malformed("hutch builds templates from an image of its catalog (fromImage); fromTemplate and private registries are not supported")
	}
	if len(in.Steps) > maxBuildSteps {
		return answer{}, errdefs.Malformed("a template of %d steps; at most %d", len(in.Steps), maxBuildSteps)
	}
	tb := tr.templateBuilds()
	tb.mu.Lock()
	files := tb.files[b.owner]
	dockerfile, contextTar, err := dockerfileOf(tr.imageOf(ctx, in.FromImage), in.Steps, files)
	tb.mu.Unlock()
	if err != nil {
		return answer{}, err
	}
	b.mu.Lock()
	if b.started {
		b.mu.Unlock()
		return answer{}, errdefs.Malformed("build %s has started already", b.id)
	}
	b.started, b.status = true, "building"
	b.mu.Unlock()
	req := api.TemplateBuildRequest{Name: b.name, Dockerfile: dockerfile, Context: contextTar, CPUs: b.cpus, MemoryMB: b.memoryMB,
		StartCmd: in.StartCmd, ReadyCmd: in.ReadyCmd, NoCache: in.Force, Network: true}
	go tr.runBuild(context.WithoutCancel(ctx), b, req)
	return answer{status: http.StatusAccepted}, nil
}

// imageOf is the catalog image an SDK's fromImage names: itself, or its
// repository's last part ("python:3.12" is python) when that is one.
func (tr *Transport) imageOf(ctx context.Context, ref string) string {
	if ref == "" {
		return "python"
	}
	res, err := functions.Invoke(ctx, tr.t, api.FnCatalogList, api.CatalogRequest{})
	cat, ok := res.(api.CatalogResponse)
	if err != nil || !ok {
		return ref
	}
	repo, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	for _, want := range []string{ref, repo} {
		for _, img := range cat.Images {
			if img.Name == want {
				return want
			}
		}
	}
	return ref
}

// dockerfileOf is the Dockerfile of the SDK's steps and the context tar
// its COPYs read: the uploaded tars of their files, merged.
func dockerfileOf(image string, steps []e2bStep, files map[string][]byte) (string, []byte, error) {
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\n", image)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	user := ""
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	used := map[string]bool{}
	for i, st := range steps {
		bad := func(why string) error {
			return errdefs.Malformed("template step %d (%s): %s", i+1, spec.Clip(st.Type, 16), why)
		}
		// Words written unquoted (a path, a user, an ENV key) stay on their line.
		for j, a := range st.Args {
			quoted := (st.Type == "RUN" && j == 0) || (st.Type == "COPY" && j < 2) || (st.Type == "ENV" && j%2 == 1)
			if !quoted && strings.ContainsAny(a, "\n\r \t") {
				return "", nil, bad(fmt.Sprintf("argument %q is not one word", spec.Clip(a, 32)))
			}
		}
		switch st.Type {
		case "RUN":
			if len(st.Args) == 0 {
				return "", nil, bad("no command")
			}
			if len(st.Args) > 1 && st.Args[1] != "" {
				fmt.Fprintf(&df, "USER %s\nRUN [\"/bin/sh\", \"-c\", %s]\nUSER %s\n", st.Args[1], q(st.Args[0]), cmpOr(user, "root"))
				continue
			}
			fmt.Fprintf(&df, "RUN [\"/bin/sh\", \"-c\", %s]\n", q(st.Args[0]))
		case "COPY":
			if len(st.Args) < 2 {
				return "", nil, bad("no source or destination")
			}
			data, ok := files[st.FilesHash]
			if !ok {
				return "", nil, bad("its files were not uploaded")
			}
			if !used[st.FilesHash] {
				used[st.FilesHash] = true
				if err := appendTar(tw, data); err != nil {
					return "", nil, bad("the uploaded files: " + err.Error())
				}
			}
			flags := ""
			if len(st.Args) > 2 && st.Args[2] != "" {
				flags += " --chown=" + st.Args[2]
			}
			if len(st.Args) > 3 && st.Args[3] != "" {
				if _, err := strconv.ParseUint(st.Args[3], 8, 32); err != nil {
					return "", nil, bad("mode " + spec.Clip(st.Args[3], 16))
				}
				flags += " --chmod=" + st.Args[3]
			}
			fmt.Fprintf(&df, "COPY%s [%s, %s]\n", flags, q(st.Args[0]), q(st.Args[1]))
		case "ENV":
			if len(st.Args)%2 != 0 || len(st.Args) == 0 {
				return "", nil, bad("ENV takes key and value pairs")
			}
			df.WriteString("ENV")
			for j := 0; j < len(st.Args); j += 2 {
				fmt.Fprintf(&df, " %s=%s", st.Args[j], q(st.Args[j+1]))
			}
			df.WriteString("\n")
		case "WORKDIR":
			if len(st.Args) != 1 {
				return "", nil, bad("WORKDIR takes one path")
			}
			fmt.Fprintf(&df, "WORKDIR %s\n", st.Args[0])
		case "USER":
			if len(st.Args) != 1 {
				return "", nil, bad("USER takes one user")
			}
			user = st.Args[0]
			fmt.Fprintf(&df, "USER %s\n", user)
		default:
			return "", nil, bad("hutch does not run this step")
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	return df.String(), ctxTar.Bytes(), nil
}

// appendTar copies the entries of data (a tar, maybe gzipped) to tw.
func appendTar(tw *tar.Writer, data []byte) error {
	r := io.Reader(bytes.NewReader(data))
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, io.LimitReader(tr, maxUploadBytes)); err != nil {
			return err
		}
	}
}

// runBuild runs b's build, keeping its log.
func (tr *Transport) runBuild(ctx context.Context, b *e2bBuild, req api.TemplateBuildRequest) {
	ctx = auth.WithOwner(ctx, b.owner)
	log := func(level, msg string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.logs) < maxBuildLogLines {
			b.logs = append(b.logs, logEntry{Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Level: level, Message: msg})
		}
	}
	err := func() error {
		res, err := functions.Invoke(ctx, tr.t, api.FnTemplateBuild, req)
		if err != nil {
			return err
		}
		s, ok := res.(*functions.Stream)
		if !ok {
			return errdefs.New(errdefs.CodeInternal, "the template build did not stream")
		}
		defer s.Close()
		for {
			ev, err := s.Next(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if e, ok := ev.Data.(api.TemplateBuildEvent); ok {
				log("info", buildLine(e))
			}
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.status, b.reason = "error", errdefs.As(err).Message
		return
	}
	b.status = "ready"
}

// buildLine is a build event as a log line.
func buildLine(e api.TemplateBuildEvent) string {
	switch e.Phase {
	case "step":
		line := fmt.Sprintf("[%d/%d] %s", e.Step, e.Steps, e.Instruction)
		if e.Cached {
			line += " (cached)"
		}
		return line
	case "start":
		if e.Cached {
			return "start command unchanged: its snapshot is kept (cached)"
		}
		return "starting: " + e.Output
	case "snapshot":
		return "ready: snapshotting it running"
	case "done":
		return "build done"
	}
	return e.Output
}

func (tr *Transport) buildStatus(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	b, err := tr.build(ctx, r.PathValue("templateID"), r.PathValue("buildID"))
	if err != nil {
		return answer{}, err
	}
	off, _ := strconv.Atoi(r.URL.Query().Get("logsOffset"))
	b.mu.Lock()
	defer b.mu.Unlock()
	off = min(max(off, 0), len(b.logs))
	entries := append([]logEntry{}, b.logs[off:]...)
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = e.Message
	}
	out := map[string]any{"templateID": b.name, "buildID": b.id, "status": b.status, "logEntries": entries, "logs": lines}
	if b.status == "error" {
		out["reason"] = map[string]any{"message": b.reason, "logEntries": []logEntry{}}
	}
	return answer{status: http.StatusOK, body: out}, nil
}
