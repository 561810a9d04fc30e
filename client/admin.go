package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// ReloadPath is the daemon's route of a config reload.
const ReloadPath = "/v1/admin/reload"

// AdminReload makes the daemon read its config file (and TLS files) again
// and apply what can change live; an operator's call.
func (c *Client) AdminReload(ctx context.Context) (api.ReloadResult, error) {
	var out api.ReloadResult
	return out, c.do(ctx, http.MethodPost, ReloadPath, nil, &out)
}

// BackupPath is the daemon's route of a backup (issue 41: 5).
const BackupPath = "/v1/admin/backup"

// AdminBackup streams the daemon's backup archive (internal/backup) to w;
// volumes adds the volumes' disks. An operator's call.
func (c *Client) AdminBackup(ctx context.Context, w io.Writer, volumes bool) error {
	path := BackupPath
	if volumes {
		path += "?volumes=1"
	}
	resp, err := c.sendAccepting(ctx, http.MethodPost, path, nil, "", "application/gzip")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("reading the backup: %w", err)
	}
	return nil
}
