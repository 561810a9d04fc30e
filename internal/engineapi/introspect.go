package engineapi

// The engine's introspection functions, as the iii engine names them:
// the workers connected (the caller's own), the trigger types hutch
// fires, and log calls that land in the daemon's log. engine::functions::*
// are the function table's own (they describe the table).

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sort"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Introspection function ids.
const (
	fnWorkersList  = "engine::workers::list"
	fnWorkersInfo  = "engine::workers::info"
	fnTriggersList = "engine::triggers::list"
	fnTriggersInfo = "engine::triggers::info"
	fnLogInfo      = "engine::log::info"
	fnLogWarn      = "engine::log::warn"
	fnLogError     = "engine::log::error"
	fnLogDebug     = "engine::log::debug"
)

// maxWorkerFunctions bounds the functions a worker's registrations are
// remembered for.
const maxWorkerFunctions = 1024

// workerView is a connected worker as engine::workers::* show it.
type workerView struct {
	WorkerID  string   `json:"worker_id"`
	Name      string   `json:"name,omitempty"`
	Runtime   string   `json:"runtime,omitempty"`
	Version   string   `json:"version,omitempty"`
	OS        string   `json:"os,omitempty"`
	PID       int      `json:"pid,omitempty"`
	Connected bool     `json:"connected"`
	Functions []string `json:"functions"`
	Triggers  int      `json:"trigger_count"`
}

// triggerTypeView is a trigger type as engine::triggers::* show it.
type triggerTypeView struct {
	ID                   string          `json:"id"`
	Description          string          `json:"description"`
	TriggerRequestFormat json.RawMessage `json:"trigger_request_format"`
	CallRequestFormat    json.RawMessage `json:"call_request_format"`
}

// triggerTypes are the trigger types hutch fires.
func triggerTypes() []triggerTypeView {
	return []triggerTypeView{{ID: TriggerTypeEvent,
		Description:          "Calls the function with each event of the caller's sandboxes (config: type pattern, sandbox_id, since, after), in order, the next once it answered",
		TriggerRequestFormat: functions.SchemaOf(reflect.TypeFor[api.EventsRequest]()),
		CallRequestFormat:    functions.SchemaOf(reflect.TypeFor[api.EventRecord]())}}
}

// introspect runs an introspection function of the session; ok is false
// for another id.
func (sess *session) introspect(ctx context.Context, id string, data json.RawMessage) (res any, ok bool, err error) {
	switch id {
	case fnWorkersList:
		return map[string]any{"workers": sess.s.workersOf(auth.OwnerFrom(ctx))}, true, nil
	case fnWorkersInfo:
		var req struct {
			WorkerID string `json:"worker_id"`
		}
		if err := functions.Decode(data, &req); err != nil {
			return nil, true, err
		}
		for _, w := range sess.s.workersOf(auth.OwnerFrom(ctx)) {
			if w.WorkerID == req.WorkerID {
				return w, true, nil
			}
		}
		return nil, true, errdefs.New(errdefs.CodeNotFound, "no worker %q of yours is connected", clip(req.WorkerID, 64))
	case fnTriggersList:
		return map[string]any{"triggers": triggerTypes()}, true, nil
	case fnTriggersInfo:
		var req struct {
			TriggerTypeID string `json:"trigger_type_id"`
		}
		if err := functions.Decode(data, &req); err != nil {
			return nil, true, err
		}
		for _, t := range triggerTypes() {
			if t.ID == req.TriggerTypeID {
				return t, true, nil
			}
		}
		return nil, true, errdefs.New(errdefs.CodeNotFound, "no trigger type %q (hutch fires %s)", clip(req.TriggerTypeID, 64), TriggerTypeEvent)
	case fnLogInfo, fnLogWarn, fnLogError, fnLogDebug:
		return struct{}{}, true, sess.logCall(ctx, id, data)
	}
	return nil, false, nil
}

// logCall writes a worker's log call into the daemon's log, tagged with
// the worker, its text escaped and clipped.
func (sess *session) logCall(ctx context.Context, id string, data json.RawMessage) error {
	var req struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if err := functions.Decode(data, &req); err != nil {
		return err
	}
	level := map[string]slog.Level{fnLogInfo: slog.LevelInfo, fnLogWarn: slog.LevelWarn, fnLogError: slog.LevelError, fnLogDebug: slog.LevelDebug}[id]
	attrs := []any{"owner", auth.OwnerFrom(ctx)}
	if len(req.Data) > 0 {
		attrs = append(attrs, "data", safetext.Line(string(req.Data), 4096))
	}
	sess.logger().Log(ctx, level, "worker: "+safetext.Line(req.Message, 4096), attrs...)
	return nil
}

// noteFunction records that the session's worker registered (or, with
// gone, unregistered) function id.
func (sess *session) noteFunction(id string, gone bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if gone {
		delete(sess.functions, id)
	} else if len(sess.functions) < maxWorkerFunctions && id != "" {
		sess.functions[clip(id, 256)] = true
	}
}

// view is the session's worker as engine::workers::* show it.
func (sess *session) view() workerView {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	v := workerView{WorkerID: sess.workerID, Name: sess.info.Name, Runtime: sess.info.Runtime, Version: sess.info.Version,
		OS: sess.info.OS, PID: sess.info.PID, Connected: true, Functions: []string{}, Triggers: len(sess.triggers)}
	for f := range sess.functions {
		v.Functions = append(v.Functions, f)
	}
	sort.Strings(v.Functions)
	return v
}

// workersOf lists owner's connected workers.
func (s *Server) workersOf(owner string) []workerView {
	s.mu.Lock()
	var mine []*session
	for sess, o := range s.live {
		if o == owner {
			mine = append(mine, sess)
		}
	}
	s.mu.Unlock()
	out := make([]workerView, 0, len(mine))
	for _, sess := range mine {
		out = append(out, sess.view())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out
}
