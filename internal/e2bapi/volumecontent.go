package e2bapi

// issue 40: E2B's volume content API (/volumecontent/{id}/{dir,file,path})
// on sandbox::volume::fs::*. The volume's token (checked by
// volumeContent) names its owner; paths are inside the volume.

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// serveVolumeContent answers one volume content route for the volume's
// owner (ctx).
func (tr *Transport) serveVolumeContent(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, p := r.PathValue("id"), q.Get("path")
	own, err := ownership(q.Get("uid"), q.Get("gid"), q.Get("mode"))
	force := q.Get("force") == "true"
	var ans answer
	if err == nil {
		switch r.Method + " " + r.URL.Path[len("/volumecontent/"+name):] {
		case "GET /dir":
			depth := 0
			if d := q.Get("depth"); d != "" {
				if depth, err = strconv.Atoi(d); err != nil {
					err = errdefs.Malformed("depth %q is not a number", d)
					break
				}
			}
			var res api.VolumeFsListResponse
			if res, err = functions.Call[api.VolumeFsListResponse](ctx, tr.t, api.FnVolumeFsList, api.VolumeFsListRequest{Name: name, Path: p, Depth: depth}); err == nil {
				ans = answer{http.StatusOK, res.Entries}
			}
		case "POST /dir":
			ans, err = entryAnswer(http.StatusCreated)(functions.Call[api.VolumeEntry](ctx, tr.t, api.FnVolumeFsMkdir, api.VolumeFsMkdirRequest{Name: name, Path: p, Force: force, VolumeOwnership: own}))
		case "GET /path":
			ans, err = entryAnswer(http.StatusOK)(functions.Call[api.VolumeEntry](ctx, tr.t, api.FnVolumeFsStat, api.VolumeFsRequest{Name: name, Path: p}))
		case "PATCH /path":
			var in api.VolumeOwnership
			body, rerr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
			if err = rerr; err == nil {
				err = decode(body, &in)
			}
			if err == nil {
				ans, err = entryAnswer(http.StatusOK)(functions.Call[api.VolumeEntry](ctx, tr.t, api.FnVolumeFsSet, api.VolumeFsSetRequest{Name: name, Path: p, VolumeOwnership: in}))
			}
		case "DELETE /path":
			_, err = functions.Call[api.VolumeFsRemoveResponse](ctx, tr.t, api.FnVolumeFsRemove, api.VolumeFsRequest{Name: name, Path: p})
			ans = answer{status: http.StatusNoContent}
		case "PUT /file":
			// The body streams into the volume, bounded by its size.
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
			ans, err = entryAnswer(http.StatusOK)(functions.Call[api.VolumeEntry](ctx, tr.t, api.FnVolumeFsWrite, api.VolumeFsWriteRequest{Name: name, Path: p, Force: force, VolumeOwnership: own, Body: r.Body}))
		case "GET /file":
			var res api.VolumeFsReadResponse
			if res, err = functions.Call[api.VolumeFsReadResponse](ctx, tr.t, api.FnVolumeFsRead, api.VolumeFsRequest{Name: name, Path: p}); err == nil {
				data, derr := base64.StdEncoding.DecodeString(res.ContentB64)
				if derr != nil {
					err = derr
					break
				}
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(data)
				return
			}
		}
	}
	switch {
	case err != nil:
		writeError(w, err)
	case ans.body == nil:
		w.WriteHeader(ans.status)
	default:
		writeJSON(w, ans.status, ans.body)
	}
}

// entryAnswer answers an entry (E2B's VolumeEntryStat) with status.
func entryAnswer(status int) func(api.VolumeEntry, error) (answer, error) {
	return func(e api.VolumeEntry, err error) (answer, error) { return answer{status, e}, err }
}

// ownership reads the uid, gid and mode query parameters (decimal, as
// the SDK sends them); each is optional.
func ownership(uid, gid, mode string) (api.VolumeOwnership, error) {
	var o api.VolumeOwnership
	for _, f := range []struct {
		name, v string
		dst     **uint32
	}{{"uid", uid, &o.UID}, {"gid", gid, &o.GID}, {"mode", mode, &o.Mode}} {
		if f.v == "" {
			continue
		}
		n, err := strconv.ParseUint(f.v, 10, 32)
		if err != nil {
			return o, errdefs.Malformed("%s %q is not a number", f.name, f.v)
		}
		v := uint32(n)
		*f.dst = &v
	}
	return o, nil
}
