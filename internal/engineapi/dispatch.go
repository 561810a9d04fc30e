package engineapi

import (
	"context"
	"encoding/json"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// The engine's own functions that this transport serves; every other id
// goes to the function table.
const (
	fnRegisterWorker = "engine::workers::register"
	fnCreateChannel  = "engine::channels::create"
)

// dispatch runs function id for a session.
func (s *Server) dispatch(ctx context.Context, sess *session, id string, data json.RawMessage) (any, error) {
	if res, ok, err := sess.introspect(ctx, id, data); ok {
		return res, err
	}
	switch id {
	case fnRegisterWorker:
		return sess.registerWorker(data)
	case fnCreateChannel:
		var req api.ChannelCreateRequest
		if err := functions.Decode(data, &req); err != nil {
			return nil, err
		}
		_, resp, err := s.channels.create(auth.OwnerFrom(ctx), req.BufferSize)
		return resp, err
	}
	f, ok := s.table.Lookup(id)
	switch {
	case !ok:
	case f.Streams:
		return s.callStream(ctx, id, data)
	case f.TakesBody:
		if ref, rest, ok, err := streamedContent(data); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return s.callWithBody(ctx, id, ref, rest)
		}
	case f.GivesBody:
		return s.callGivingBody(ctx, id, data)
	}
	return s.table.Call(ctx, id, data, functions.Params{})
}

// workerInfo is what a worker says about itself when it starts; the SDK
// sends more (telemetry), which is ignored.
type workerInfo struct {
	Name    string `json:"name"`
	Runtime string `json:"runtime"`
	Version string `json:"version"`
	OS      string `json:"os"`
	PID     int    `json:"pid"`
}

// registerWorker records a worker's announcement in the log.
func (sess *session) registerWorker(data json.RawMessage) (any, error) {
	var info workerInfo
	if len(data) > 0 {
		if err := json.Unmarshal(data, &info); err != nil {
			return nil, errdefs.Malformed("malformed worker announcement: %v", err)
		}
	}
	info = workerInfo{Name: clip(info.Name, 128), Runtime: clip(info.Runtime, 32), Version: clip(info.Version, 32), OS: clip(info.OS, 128), PID: info.PID}
	sess.mu.Lock()
	sess.info = info
	sess.mu.Unlock()
	sess.logger().Info("engine worker connected", "name", safetext.Line(info.Name, 128), "runtime", safetext.Line(info.Runtime, 32),
		"version", safetext.Line(info.Version, 32), "os", safetext.Line(info.OS, 128), "pid", info.PID)
	return struct{}{}, nil
}
