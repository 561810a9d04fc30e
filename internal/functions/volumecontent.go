package functions

// issue 40: a volume's files from the host, sandbox::volume::fs::*.

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// VolumeContent reads and writes the files of the owners' volumes
// without a sandbox (volumesvc.Service).
type VolumeContent interface {
	ListVolumeDir(ctx context.Context, req api.VolumeFsListRequest) (api.VolumeFsListResponse, error)
	StatVolumePath(ctx context.Context, req api.VolumeFsRequest) (api.VolumeEntry, error)
	ReadVolumeFile(ctx context.Context, req api.VolumeFsRequest) (api.VolumeFsReadResponse, error)
	WriteVolumeFile(ctx context.Context, req api.VolumeFsWriteRequest) (api.VolumeEntry, error)
	MakeVolumeDir(ctx context.Context, req api.VolumeFsMkdirRequest) (api.VolumeEntry, error)
	SetVolumePath(ctx context.Context, req api.VolumeFsSetRequest) (api.VolumeEntry, error)
	RemoveVolumePath(ctx context.Context, req api.VolumeFsRequest) (api.VolumeFsRemoveResponse, error)
}

// registerVolumeContent adds sandbox::volume::fs::* when the table's
// Volumes serve them.
func registerVolumeContent(t *Table) {
	v, ok := t.deps.Volumes.(VolumeContent)
	if !ok {
		return
	}
	add(t, api.FnVolumeFsList, "List a directory of a volume without a sandbox: its entries to depth levels (1 to 10), by path; paths are inside the volume, / its root", v.ListVolumeDir)
	add(t, api.FnVolumeFsStat, "Describe a path of a volume itself (a symlink is not followed): type, size, mode, uid, gid, times", v.StatVolumePath)
	add(t, api.FnVolumeFsRead, "Read a regular file of a volume (at most 16 MiB) as content_b64", v.ReadVolumeFile)
	add(t, api.FnVolumeFsWrite, "Write a file of a volume from content_b64: it appears whole; an existing file is replaced only with force; uid, gid and mode set its owner", v.WriteVolumeFile)
	add(t, api.FnVolumeFsMkdir, "Make a directory of a volume; force makes missing parents and keeps an existing directory", v.MakeVolumeDir)
	add(t, api.FnVolumeFsSet, "Set the owner (uid, gid) and mode of a path of a volume", v.SetVolumePath)
	add(t, api.FnVolumeFsRemove, "Remove a file, symlink or directory (with its contents) of a volume", v.RemoveVolumePath)
}

func init() {
	for fn, t := range map[string]api.Tool{
		api.FnVolumeFsList:   tool(reads, api.ToolAreaVolumes, "volume_fs_list", "List a directory of a volume (depth 1 to 10) without a sandbox."),
		api.FnVolumeFsStat:   tool(reads, api.ToolAreaVolumes, "volume_fs_stat", "Describe a path of a volume: type, size, mode, owner, times."),
		api.FnVolumeFsRead:   tool(reads, api.ToolAreaVolumes, "volume_fs_read", "Read a file of a volume (at most 16 MiB), base64."),
		api.FnVolumeFsWrite:  tool(changes, api.ToolAreaVolumes, "volume_fs_write", "Write a file of a volume from content_b64; force replaces an existing one."),
		api.FnVolumeFsMkdir:  tool(sets, api.ToolAreaVolumes, "volume_fs_mkdir", "Make a directory of a volume; force makes its parents."),
		api.FnVolumeFsSet:    tool(sets, api.ToolAreaVolumes, "volume_fs_set", "Set the owner (uid, gid) and mode of a path of a volume."),
		api.FnVolumeFsRemove: tool(destroys, api.ToolAreaVolumes, "volume_fs_remove", "Remove a file or directory (with its contents) of a volume."),
	} {
		tools[fn] = t
	}
}
