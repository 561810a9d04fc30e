package e2bapi

// The routes E2B's API grew in 2026 (fork, snapshots, volumes, template
// tags and aliases), each onto hutch's own functions:
//
//	POST   /sandboxes/{id}/fork          sandbox::fork, then set_timeout per copy
//	POST   /sandboxes/{id}/snapshots     sandbox::snapshot::create
//	GET    /snapshots                    sandbox::snapshot::list
//	POST   /v2/sandboxes {templateID: a snapshot id or name}  sandbox::create {snapshot_id}
//	POST   /volumes, GET /volumes, GET|DELETE /volumes/{id}   sandbox::volume::*
//	GET    /templates/{id}               sandbox::template::get
//	DELETE /templates/{id}               sandbox::snapshot::delete or sandbox::template::delete
//	GET    /templates/aliases/{alias}    sandbox::template::get
//	GET    /templates/{id}/tags          sandbox::template::get (its one tag, "default")
//
// What hutch cannot serve (tag assignment, the volume content API) answers
// 501 with E2B's {code, message}, which the SDK raises as its error class
// with that text, never a "not found".

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// kindVolume is the kind of a volume's content token (VolumeAndToken.token).
const kindVolume = "volume"

// defaultTag is the one tag of a hutch template: it has one build.
const defaultTag = "default"

// parityRoutes registers the routes of this file.
func (tr *Transport) parityRoutes() {
	for _, p := range volumeContentPaths {
		tr.control.HandleFunc(p, tr.volumeContent)
	}
	for pattern, h := range tr.parityControl() {
		tr.control.Handle(pattern, tr.serve(h))
	}
}

// parityControl are the control-plane routes of this file.
func (tr *Transport) parityControl() map[string]controlFunc {
	return map[string]controlFunc{
		"POST /sandboxes/{id}/fork":      tr.fork,
		"POST /sandboxes/{id}/snapshots": tr.createSnapshot,
		"GET /snapshots":                 tr.listSnapshots,
		"POST /volumes":                  tr.createVolume,
		"GET /volumes":                   tr.listVolumes,
		"GET /volumes/{id}":              tr.getVolume,
		"DELETE /volumes/{id}":           tr.deleteVolume,
		"GET /templates/{id}":            tr.getTemplate,
		"DELETE /templates/{id}":         tr.deleteTemplate,
		"GET /templates/{id}/{sub}":      tr.templateSub,
		"POST /templates/tags":           unsupported(tagsUnsupported),
		"DELETE /templates/tags":         unsupported(tagsUnsupported),
	}
}

// The reasons of the unsupported routes (README's table).
const (
	tagsUnsupported = "hutch templates have one build and one tag, \"default\": assigning or removing tags is not supported; " +
		"create another template (hutch template create) for another version"
)

// unsupported answers 501 with why: the SDK raises its error class with
// "501: " and the reason, never a "not found".
func unsupported(why string) controlFunc {
	return func(context.Context, *http.Request, []byte) (answer, error) {
		return answer{}, fail(http.StatusNotImplemented, why)
	}
}

// forkBody is SandboxForkRequest.
type forkBody struct {
	Count   int     `json:"count"`
	Timeout *uint64 `json:"timeout"`
}

// forkResult is SandboxForkResult: a sandbox or its error.
type forkResult struct {
	Sandbox *sandboxAnswer `json:"sandbox,omitempty"`
	Error   *errorBody     `json:"error,omitempty"`
}

// fork is sandbox::fork of {id}: the copies start with the source's life
// terms, and with the body's timeout when it gives one. hutch's fork
// makes all copies or none, so one failure is the request's.
func (tr *Transport) fork(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in forkBody
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	s, err := tr.info(ctx, r)
	if err != nil {
		return answer{}, err
	}
	res, err := functions.Call[api.ForkResponse](ctx, tr.t, api.FnFork, api.ForkRequest{SandboxID: s.SandboxID, Count: in.Count})
	if err != nil {
		return answer{}, err
	}
	out := make([]forkResult, 0, len(res.SandboxIDs))
	for _, id := range res.SandboxIDs {
		if in.Timeout != nil && *in.Timeout > 0 {
			if _, err := functions.Call[api.SetTimeoutResponse](ctx, tr.t, api.FnSetTimeout,
				api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: *in.Timeout}); err != nil {
				// A copy the caller gets no id of is not left running.
				_, _ = functions.Call[api.StopResponse](context.WithoutCancel(ctx), tr.t, api.FnStop, api.StopRequest{SandboxID: id})
				status, msg := errorStatus(err)
				out = append(out, forkResult{Error: &errorBody{Code: status, Message: msg}})
				continue
			}
		}
		a := tr.sandboxAnswer(ctx, r, id, s.Image)
		out = append(out, forkResult{Sandbox: &a})
	}
	return answer{http.StatusCreated, out}, nil
}

// snapshotBody is SandboxSnapshotRequest.
type snapshotBody struct {
	Name string `json:"name"`
}

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func snapshotOf(s api.SnapshotInfo) snapshotInfo {
	names := []string{}
	if s.Name != "" {
		names = append(names, s.Name)
	}
	return snapshotInfo{SnapshotID: s.SnapshotID, Names: names}
}

func (tr *Transport) createSnapshot(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in snapshotBody
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	s, err := tr.info(ctx, r)
	if err != nil {
		return answer{}, err
	}
	snap, err := functions.Call[api.SnapshotInfo](ctx, tr.t, api.FnSnapshotCreate,
		api.SnapshotCreateRequest{SandboxID: s.SandboxID, Name: in.Name})
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusCreated, snapshotOf(snap)}, nil
}

// listSnapshots is sandbox::snapshot::list filtered by sandboxID and name
// (a name or id), oldest first, in pages of limit whose next token is
// the offset of the next page.
func (tr *Transport) listSnapshots(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	q := r.URL.Query()
	limit, err := atoiOr(q.Get("limit"), defaultListLimit)
	if err != nil || limit < 1 || limit > maxListLimit {
		return answer{}, errdefs.Malformed("limit must be between 1 and %d", maxListLimit)
	}
	offset, err := atoiOr(q.Get("nextToken"), 0)
	if err != nil || offset < 0 {
		return answer{}, errdefs.Malformed("nextToken %q is not one this API gave", safetext.Clip(q.Get("nextToken"), 64))
	}
	res, err := functions.Call[api.SnapshotListResponse](ctx, tr.t, api.FnSnapshotList, api.SnapshotListRequest{})
	if err != nil {
		return answer{}, err
	}
	sandboxID, name := q.Get("sandboxID"), strings.TrimSuffix(q.Get("name"), ":"+defaultTag)
	var all []snapshotInfo
	slices.SortStableFunc(res.Snapshots, func(a, b api.SnapshotInfo) int { return cmp.Compare(a.CreatedAt, b.CreatedAt) })
	for _, s := range res.Snapshots {
		if (sandboxID == "" || s.SandboxID == sandboxID) && (name == "" || s.Name == name || s.SnapshotID == name) {
			all = append(all, snapshotOf(s))
		}
	}
	page := pageOf{items: []snapshotInfo{}}
	if offset < len(all) {
		end := min(offset+limit, len(all))
		page.items = all[offset:end]
		if end < len(all) {
			page.next = strconv.Itoa(end)
		}
	}
	return answer{http.StatusOK, page}, nil
}

// snapshotNamed is the caller's snapshot whose id or name is ref (E2B's
// templateID of a create from a snapshot), if any.
func (tr *Transport) snapshotNamed(ctx context.Context, ref string) (api.SnapshotInfo, bool) {
	ref = strings.TrimSuffix(ref, ":"+defaultTag)
	if s, err := functions.Call[api.SnapshotInfo](ctx, tr.t, api.FnSnapshotGet, api.SnapshotRequest{SnapshotID: ref}); err == nil {
		return s, true
	}
	res, err := functions.Call[api.SnapshotListResponse](ctx, tr.t, api.FnSnapshotList, api.SnapshotListRequest{})
	if err != nil {
		return api.SnapshotInfo{}, false
	}
	i := slices.IndexFunc(res.Snapshots, func(s api.SnapshotInfo) bool { return s.Name == ref })
	if i < 0 {
		return api.SnapshotInfo{}, false
	}
	return res.Snapshots[i], true
}

// volumeAnswer is E2B's VolumeAndToken (Volume without the token): the
// id of a hutch volume is its name.
type volumeAnswer struct {
	VolumeID string `json:"volumeID"`
	Name     string `json:"name"`
	Token    string `json:"token,omitempty"`
}

// volumeTokenAnswer is a volume with its content token.
func (tr *Transport) volumeTokenAnswer(ctx context.Context, name string) volumeAnswer {
	return volumeAnswer{VolumeID: name, Name: name, Token: tr.opts.Signer.Token(kindVolume, auth.OwnerFrom(ctx), name)}
}

func (tr *Transport) createVolume(ctx context.Context, _ *http.Request, body []byte) (answer, error) {
	var in api.VolumeCreateRequest
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	v, err := functions.Call[api.VolumeInfo](ctx, tr.t, api.FnVolumeCreate, api.VolumeCreateRequest{Name: in.Name})
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusCreated, tr.volumeTokenAnswer(ctx, v.Name)}, nil
}

func (tr *Transport) listVolumes(ctx context.Context, _ *http.Request, _ []byte) (answer, error) {
	res, err := functions.Call[api.VolumeListResponse](ctx, tr.t, api.FnVolumeList, api.VolumeListRequest{})
	if err != nil {
		return answer{}, err
	}
	out := make([]volumeAnswer, 0, len(res.Volumes))
	for _, v := range res.Volumes {
		out = append(out, volumeAnswer{VolumeID: v.Name, Name: v.Name})
	}
	return answer{http.StatusOK, out}, nil
}

func (tr *Transport) getVolume(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	v, err := functions.Call[api.VolumeInfo](ctx, tr.t, api.FnVolumeGet, api.VolumeRequest{Name: r.PathValue("id")})
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusOK, tr.volumeTokenAnswer(ctx, v.Name)}, nil
}

func (tr *Transport) deleteVolume(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	_, err := functions.Call[api.VolumeDeleteResponse](ctx, tr.t, api.FnVolumeDelete, api.VolumeRequest{Name: r.PathValue("id")})
	return answer{status: http.StatusNoContent}, err
}

// volumeContentPaths are the volume content API's routes: the SDK sends
// them to E2B_VOLUME_API_URL (or https://api.{domain}) with the volume's
// token as a bearer and no X-API-KEY.
var volumeContentPaths = []string{
	"GET /volumecontent/{id}/dir", "POST /volumecontent/{id}/dir",
	"GET /volumecontent/{id}/path", "PATCH /volumecontent/{id}/path", "DELETE /volumecontent/{id}/path",
	"GET /volumecontent/{id}/file", "PUT /volumecontent/{id}/file",
}

// volumeContent checks the volume's token (401 without a valid one, as
// E2B answers), then serves the route for the volume's owner.
func (tr *Transport) volumeContent(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	owner, err := tr.opts.Signer.Owner(token, r.PathValue("id"), kindVolume)
	if !ok || err != nil || !tr.admitted(owner) {
		writeError(w, fail(http.StatusUnauthorized, "missing or invalid volume token (Authorization: Bearer, the token of the volume's create or get)"))
		return
	}
	tr.serveVolumeContent(auth.WithOwner(r.Context(), owner), w, r) // issue 40: volumecontent.go
}

// templateAnswer is E2B's TemplateWithBuilds of a hutch template: one
// build, ready, of the template's shape.
type templateAnswer struct {
	TemplateID    string          `json:"templateID"`
	Aliases       []string        `json:"aliases"`
	Names         []string        `json:"names"`
	Public        bool            `json:"public"`
	SpawnCount    int64           `json:"spawnCount"`
	LastSpawnedAt *string         `json:"lastSpawnedAt"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
	Builds        []templateBuild `json:"builds"`
}

// templateBuild is E2B's TemplateBuild.
type templateBuild struct {
	BuildID     string `json:"buildID"`
	Status      string `json:"status"`
	CPUCount    uint32 `json:"cpuCount"`
	MemoryMB    uint32 `json:"memoryMB"`
	EnvdVersion string `json:"envdVersion"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
	FinishedAt  string `json:"finishedAt"`
}

// buildID is the stable id of a template's one build: a UUID (E2B's
// format) of its owner, name and creation time.
func buildID(ctx context.Context, t api.TemplateInfo) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("hutch-template\x00"+auth.OwnerFrom(ctx)+"\x00"+t.Name+"\x00"+t.CreatedAt)).String()
}

func (tr *Transport) template(ctx context.Context, name string) (api.TemplateInfo, error) {
	return functions.Call[api.TemplateInfo](ctx, tr.t, api.FnTemplateGet, api.TemplateRequest{Name: strings.TrimSuffix(name, ":"+defaultTag)})
}

func (tr *Transport) getTemplate(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	t, err := tr.template(ctx, r.PathValue("id"))
	if err != nil {
		return answer{}, err
	}
	b := templateBuild{BuildID: buildID(ctx, t), Status: "ready", CPUCount: t.CPUs, MemoryMB: t.MemoryMB,
		EnvdVersion: EnvdVersion, CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt, FinishedAt: t.CreatedAt}
	return answer{http.StatusOK, templateAnswer{TemplateID: t.Name, Aliases: []string{t.Name}, Names: []string{t.Name},
		CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt, Builds: []templateBuild{b}}}, nil
}

// deleteTemplate deletes a snapshot (Sandbox.deleteSnapshot sends its id
// here) or a template.
func (tr *Transport) deleteTemplate(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	id := r.PathValue("id")
	if s, ok := tr.snapshotNamed(ctx, id); ok {
		_, err := functions.Call[api.SnapshotDeleteResponse](ctx, tr.t, api.FnSnapshotDelete, api.SnapshotRequest{SnapshotID: s.SnapshotID})
		return answer{status: http.StatusNoContent}, err
	}
	_, err := functions.Call[api.TemplateDeleteResponse](ctx, tr.t, api.FnTemplateDelete, api.TemplateRequest{Name: strings.TrimSuffix(id, ":"+defaultTag)})
	return answer{status: http.StatusNoContent}, err
}

// templateSub serves GET /templates/aliases/{alias} and GET
// /templates/{id}/tags: one pattern, as the two overlap on
// /templates/aliases/tags.
func (tr *Transport) templateSub(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	id, sub := r.PathValue("id"), r.PathValue("sub")
	switch {
	case id == "aliases":
		return tr.templateAlias(ctx, sub)
	case sub == "tags":
		return tr.templateTags(ctx, id)
	}
	return answer{}, fail(http.StatusNotFound, "no route GET "+safetext.Clip(r.URL.Path, 128))
}

// templateAlias is E2B's TemplateAliasResponse: an alias is a hutch
// template's name.
func (tr *Transport) templateAlias(ctx context.Context, alias string) (answer, error) {
	t, err := tr.template(ctx, alias)
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusOK, map[string]any{"templateID": t.Name, "public": false}}, nil
}

// templateTag is E2B's TemplateTag.
type templateTag struct {
	Tag       string `json:"tag"`
	BuildID   string `json:"buildID"`
	CreatedAt string `json:"createdAt"`
}

func (tr *Transport) templateTags(ctx context.Context, id string) (answer, error) {
	t, err := tr.template(ctx, id)
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusOK, []templateTag{{Tag: defaultTag, BuildID: buildID(ctx, t), CreatedAt: t.CreatedAt}}}, nil
}

// The metadata keys a create through E2B's API may pick hutch's runtime
// and shape with (a template's own runtime, cpus and memory_mb apply
// otherwise); they stay in the sandbox's metadata.
const (
	MetadataRuntime  = "hutch.runtime"
	MetadataCPUs     = "hutch.cpus"
	MetadataMemoryMB = "hutch.memory_mb"
)

// volumeMountsOf are a sandbox's volumes as E2B's volumeMounts.
func volumeMountsOf(vs []api.VolumeMount) []volumeMount {
	out := make([]volumeMount, 0, len(vs))
	for _, v := range vs {
		out = append(out, volumeMount{Name: v.Name, Path: v.Path})
	}
	return out
}

// parityCreate completes a create's request with what this file maps: a
// templateID naming one of the caller's snapshots (and neither an
// e2b.templates entry nor one of their templates) starts from it,
// volumeMounts mount the caller's volumes, and the hutch.* metadata
// pick the runtime and shape.
func (tr *Transport) parityCreate(ctx context.Context, in newSandbox, req *api.CreateRequest) error {
	req.Runtime = in.Metadata[MetadataRuntime]
	for key, field := range map[string]*uint32{MetadataCPUs: &req.CPUs, MetadataMemoryMB: &req.MemoryMB} {
		v, ok := in.Metadata[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return errdefs.Malformed("metadata %s must be a positive whole number, got %q", key, safetext.Clip(v, 32))
		}
		*field = uint32(n)
	}
	if _, mapped := tr.opts.Templates[in.TemplateID]; !mapped && req.Template == "" {
		if s, ok := tr.snapshotNamed(ctx, in.TemplateID); ok {
			req.Image, req.SnapshotID = "", s.SnapshotID
		}
	}
	for _, m := range in.VolumeMounts {
		if m.Name == "" || m.Path == "" {
			return errdefs.Malformed("volumeMounts: each needs a name (a volume's id) and a path")
		}
		req.Volumes = append(req.Volumes, api.VolumeMount{Name: m.Name, Path: m.Path})
	}
	return nil
}
