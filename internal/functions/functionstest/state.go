package functionstest

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// lifecycle answers a state call through StateFunc, or S002 by default.
func lifecycle[Resp any](f *Fake, ctx context.Context, method string, req any) (Resp, error) {
	return answer[Resp](f, f.StateFunc, ctx, method, req, errdefs.New(errdefs.CodeNotFound, "sandbox not found"))
}

func (f *Fake) Pause(ctx context.Context, req api.PauseRequest) (api.StateResponse, error) {
	return lifecycle[api.StateResponse](f, ctx, "Pause", req)
}

func (f *Fake) Resume(ctx context.Context, req api.ResumeRequest) (api.StateResponse, error) {
	return lifecycle[api.StateResponse](f, ctx, "Resume", req)
}

func (f *Fake) SetTimeout(ctx context.Context, req api.SetTimeoutRequest) (api.SetTimeoutResponse, error) {
	return lifecycle[api.SetTimeoutResponse](f, ctx, "SetTimeout", req)
}

var _ functions.Snapshots = (*Fake)(nil)

func (f *Fake) CreateSnapshot(ctx context.Context, req api.SnapshotCreateRequest) (api.SnapshotInfo, error) {
	return lifecycle[api.SnapshotInfo](f, ctx, "CreateSnapshot", req)
}

func (f *Fake) ListSnapshots(ctx context.Context, req api.SnapshotListRequest) (api.SnapshotListResponse, error) {
	return lifecycle[api.SnapshotListResponse](f, ctx, "ListSnapshots", req)
}

func (f *Fake) GetSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotInfo, error) {
	return lifecycle[api.SnapshotInfo](f, ctx, "GetSnapshot", req)
}

func (f *Fake) DeleteSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotDeleteResponse, error) {
	return lifecycle[api.SnapshotDeleteResponse](f, ctx, "DeleteSnapshot", req)
}

func (f *Fake) Fork(ctx context.Context, req api.ForkRequest) (api.ForkResponse, error) {
	return lifecycle[api.ForkResponse](f, ctx, "Fork", req)
}

func (f *Fake) CreateTemplate(ctx context.Context, req api.TemplateCreateRequest) (api.TemplateInfo, error) {
	return lifecycle[api.TemplateInfo](f, ctx, "CreateTemplate", req)
}

func (f *Fake) ListTemplates(ctx context.Context, req api.TemplateListRequest) (api.TemplateListResponse, error) {
	return lifecycle[api.TemplateListResponse](f, ctx, "ListTemplates", req)
}

func (f *Fake) GetTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateInfo, error) {
	return lifecycle[api.TemplateInfo](f, ctx, "GetTemplate", req)
}

func (f *Fake) DeleteTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateDeleteResponse, error) {
	return lifecycle[api.TemplateDeleteResponse](f, ctx, "DeleteTemplate", req)
}
