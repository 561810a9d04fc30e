package daemon

// issue 41: 5, `hutch admin backup`: the archive of the data dir
// (internal/backup), streamed to the operator.

import (
	"io"
	"net/http"
	"time"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/backup"
)

// BackupPath is the route of `hutch admin backup` (POST, operators only).
const BackupPath = client.BackupPath

// serveBackup streams the archive; ?volumes=1 adds the volumes' disks.
// A failure part way aborts the answer, so the client sees a broken
// stream (and the archive has no end marker) rather than a short file.
func (d *daemon) serveBackup(w http.ResponseWriter, r *http.Request) {
	recs, err := d.mgr.Records("snapshots")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	db, ok := recs.(interface {
		WriteDB(io.Writer) (int64, error)
	})
	if !ok {
		http.Error(w, "the metadata store cannot be copied", http.StatusInternalServerError)
		return
	}
	// The archive takes as long as the data dir takes to read: the
	// server's write timeout, which bounds a whole answer, is lifted (an
	// operator's call; the store's read transaction ends before the
	// first byte is sent, so a slow reader holds nothing but its files).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/gzip")
	err = backup.Write(w, backup.Source{DataDir: d.opts.DataDir, DB: db.WriteDB, Volumes: r.URL.Query().Get("volumes") == "1"})
	if err != nil {
		d.log.Error("backup failed", "err", err)
		panic(http.ErrAbortHandler)
	}
	d.log.Info("backup written", "volumes", r.URL.Query().Get("volumes") == "1")
}
