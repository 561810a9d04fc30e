package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// TemplateBuilder is the template build's dependency: the snapshot
// service (snapsvc), when it builds (issue 39).
type TemplateBuilder interface {
	BuildTemplate(ctx context.Context, req api.TemplateBuildRequest, emit func(api.TemplateBuildEvent) error) (api.TemplateBuildResponse, error)
	CancelTemplateBuild(ctx context.Context, req api.TemplateBuildCancelRequest) (api.TemplateBuildCancelResponse, error)
}

// EventTemplateBuild is the type of a build's log events.
const EventTemplateBuild = "log"

// registerTemplateBuild adds sandbox::template::build, when the table's
// Snapshots can build.
func registerTemplateBuild(t *Table) {
	b, ok := t.deps.Snapshots.(TemplateBuilder)
	if !ok {
		return
	}
	addStream(t, api.FnTemplateBuild, "Build a template from a Dockerfile and its build context (a tar): each step's layer is cached, the start command (CMD/ENTRYPOINT or start_cmd) is booted once and snapshotted running; streams each step, its cache hit and output, then the template",
		func(ctx context.Context, req api.TemplateBuildRequest, e Emitter) (api.TemplateBuildResponse, error) {
			return b.BuildTemplate(ctx, req, func(ev api.TemplateBuildEvent) error { return e.emitData(EventTemplateBuild, ev) })
		})
	add(t, api.FnTemplateBuildCancel, "Cancel the caller's build of a template in progress: it stops at its running step and fails; the steps it finished stay cached",
		b.CancelTemplateBuild)
}

func init() {
	tools[api.FnTemplateBuildCancel] = tool(changes, api.ToolAreaTemplates, "template_build_cancel", "Cancel your build of a template (name) that is in progress.")
	tools[api.FnTemplateBuild] = openWorld(tool(changes, api.ToolAreaTemplates, "template_build", "Build a template from a Dockerfile (dockerfile text, context as a base64 tar, build_args, start_cmd with ready_cmd or ready_port): cached steps are reused; sandbox_create template then starts from it with its app running."))
}
