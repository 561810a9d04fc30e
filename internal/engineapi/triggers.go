package engineapi

// Triggers: a worker that registered a function asks hutch to call it for
// each event of its sandboxes, the way the engine's SDK registers any
// trigger:
//
//	iii.registerFunction('app::on_event', async (ev) => { ... })
//	iii.registerTrigger({type: 'sandbox::event', function_id: 'app::on_event',
//	    config: {type: 'sandbox.*', sandbox_id: '...'}})
//
// The config is sandbox::events::stream's request (type, sandbox_id,
// since, after), read through the function table, so a trigger sees only
// its owner's events; without after, it starts with the events recorded
// after its registration. Each event is sent as an invokefunction of the
// worker's function, one at a time: the next waits for the worker's
// invocationresult (or deliveryTimeout), so a worker gets its events in
// order and a slow one holds its own stream back, not the daemon. A
// trigger that falls behind the event log's live window resumes after the
// last event delivered. A reattached worker's trigger (same id) resumes
// after the last event it acknowledged before it went away.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// TriggerTypeEvent is the trigger type hutch fires: one invocation per
// event.
const TriggerTypeEvent = "sandbox::event"

// Bounds of triggers.
const (
	// maxTriggersPerSession bounds the triggers one connection holds.
	maxTriggersPerSession = 64
	// deliveryTimeout bounds the wait for a worker's answer to one event;
	// past it the next event is sent.
	deliveryTimeout = 30 * time.Second
	// resumeDelay spaces the restarts of a trigger's stream after an error.
	resumeDelay = 200 * time.Millisecond
)

// Engine-level codes of a refused registration.
const (
	codeTriggerTypeNotFound = "trigger_type_not_found"
	codeTooManyTriggers     = "too_many_triggers"
	codeTriggerFailed       = "trigger_registration_failed"
)

// registerTrigger starts trigger m for this session and answers its
// registration once its stream is open (or why it could not be).
func (sess *session) registerTrigger(m inbound) {
	refuse := func(code, msg string) {
		sess.send(triggerRegistrationResult{Type: typeTriggerRegistration, ID: m.ID, TriggerType: m.TriggerType, FunctionID: m.FunctionID,
			Error: &errorBody{Code: code, Message: msg}})
	}
	if m.TriggerType != TriggerTypeEvent {
		refuse(codeTriggerTypeNotFound, fmt.Sprintf("hutch fires triggers of type %q only", TriggerTypeEvent))
		return
	}
	if m.ID == "" || m.FunctionID == "" || len(m.ID) > 128 {
		refuse(codeInvalidMessage, "a trigger needs an id (at most 128 bytes) and a function_id")
		return
	}
	var req api.EventsRequest
	if len(m.Config) > 0 && string(m.Config) != "null" {
		if err := functions.Decode(m.Config, &req); err != nil {
			refuse(codeTriggerFailed, engineError(err).Message)
			return
		}
	}
	if req.After == "" {
		// A new trigger fires for what happens from now on; a reattached
		// worker's, from after the last event it answered.
		req.After = api.AfterNow
		if last, ok := sess.s.workers.cursor(sess.worker(), m.ID); ok {
			req.After = strconv.FormatUint(last, 10)
		}
	}
	ctx, cancel := context.WithCancel(sess.ctx)
	sess.mu.Lock()
	if old, ok := sess.triggers[m.ID]; ok {
		old() // a worker registering the same id again replaces it
	} else if len(sess.triggers) >= maxTriggersPerSession {
		sess.mu.Unlock()
		cancel()
		refuse(codeTooManyTriggers, fmt.Sprintf("%d triggers are registered on this connection", maxTriggersPerSession))
		return
	}
	sess.triggers[m.ID] = cancel
	sess.mu.Unlock()

	// Opened before the next message is read: an event caused by a call
	// the worker sent after registering reaches the trigger.
	st, err := sess.openEvents(ctx, req)
	if err != nil {
		sess.dropTrigger(m.ID)
		cancel()
		refuse(codeTriggerFailed, engineError(err).Message)
		return
	}
	sess.send(triggerRegistrationResult{Type: typeTriggerRegistration, ID: m.ID, TriggerType: m.TriggerType, FunctionID: m.FunctionID})
	sess.calls.Add(1)
	go func() {
		defer sess.calls.Done()
		defer cancel()
		sess.fire(ctx, m.ID, m.FunctionID, req, st)
	}()
}

// unregisterTrigger stops trigger id.
func (sess *session) unregisterTrigger(id string) {
	if cancel := sess.dropTrigger(id); cancel != nil {
		cancel()
	}
}

// dropTrigger forgets trigger id and returns its cancel function.
func (sess *session) dropTrigger(id string) context.CancelFunc {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	cancel := sess.triggers[id]
	delete(sess.triggers, id)
	return cancel
}

// openEvents opens sandbox::events::stream for req and takes its opening
// event, so that a bad config fails here.
func (sess *session) openEvents(ctx context.Context, req api.EventsRequest) (*functions.Stream, error) {
	res, err := functions.Invoke(ctx, sess.s.table, api.FnEventsStream, req)
	if err != nil {
		return nil, err
	}
	st, ok := res.(*functions.Stream)
	if !ok {
		return nil, fmt.Errorf("%s did not stream", api.FnEventsStream)
	}
	if _, err := st.Next(ctx); err != nil {
		st.Close()
		if err == io.EOF {
			err = errors.New("the event stream ended at once")
		}
		return nil, err
	}
	return st, nil
}

// fire delivers the events of st to function fn until ctx ends,
// reopening the stream after the last event delivered when it ends.
func (sess *session) fire(ctx context.Context, id, fn string, req api.EventsRequest, st *functions.Stream) {
	worker := sess.worker()
	for {
		for {
			ev, err := st.Next(ctx)
			if err != nil {
				break
			}
			if ev.ID == "" {
				continue // the opening event of a reopened stream
			}
			if !sess.deliver(ctx, fn, ev.Data) {
				st.Close()
				return
			}
			req.After = ev.ID // issue 36: in cluster mode a cursor over every node's events
			if n, err := strconv.ParseUint(ev.ID, 10, 64); err == nil {
				sess.s.workers.setCursor(worker, id, n)
			}
		}
		st.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(resumeDelay):
			}
			var err error
			if st, err = sess.openEvents(ctx, req); err == nil {
				break
			}
			sess.logger().Info("engine trigger stream", "trigger", clip(id, 128), "err", err)
		}
	}
}

// deliver sends one event to the worker's function fn and waits for its
// answer; it returns false once the session or trigger has ended.
func (sess *session) deliver(ctx context.Context, fn string, data any) bool {
	raw, err := api.Marshal(data)
	if err != nil {
		sess.logger().Error("encoding an event for a trigger", "err", err)
		return true
	}
	invID := "hutch-" + uuid.NewString()
	done := make(chan *errorBody, 1)
	sess.mu.Lock()
	sess.pending[invID] = done
	sess.mu.Unlock()
	defer func() {
		sess.mu.Lock()
		delete(sess.pending, invID)
		sess.mu.Unlock()
	}()
	idJSON, _ := json.Marshal(invID)
	sess.send(invocation{Type: typeInvokeFunction, InvocationID: idJSON, FunctionID: fn, Data: raw})
	t := time.NewTimer(deliveryTimeout)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case e := <-done:
		if e != nil {
			sess.logger().Info("engine trigger function failed", "function", clip(fn, 128), "code", clip(e.Code, 64), "message", clip(e.Message, 256))
		}
	case <-t.C:
		sess.logger().Info("engine trigger function did not answer", "function", clip(fn, 128), "after", deliveryTimeout)
	}
	return true
}

// answered takes a worker's invocationresult: the answer to an event a
// trigger delivered. Others (answers to nothing hutch sent) are ignored.
func (sess *session) answered(m inbound) {
	var id string
	if json.Unmarshal(m.InvocationID, &id) != nil {
		return
	}
	sess.mu.Lock()
	done, ok := sess.pending[id]
	sess.mu.Unlock()
	if ok {
		select {
		case done <- m.Error:
		default: // a second answer to one event
		}
	}
}
