package engineapi

// The engine's invocation budget (issue 38: 5): the invocations running
// across every session count against one total and a share per owner,
// beside each connection's own MaxInFlight, so that an owner with many
// sessions cannot run sessions × MaxInFlight at once. The bytes of their
// payloads count against the daemon's budget of request bodies
// (Options.BodyBudget), which the REST API shares, so that the invocations
// allowed cannot hold invocations × MaxMessageBytes.

import (
	"fmt"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/budget"
)

// Defaults of the invocation budget.
const (
	DefaultMaxInvocations         = 4096
	DefaultMaxInvocationsPerOwner = 1024
)

func newInvocationBudget(total, perOwner int) *budget.Budget {
	return budget.New(int64(total), int64(perOwner),
		func() error {
			return fmt.Errorf("this owner has %d engine invocations running (engine_max_invocations_per_owner)", perOwner)
		},
		func() error {
			return fmt.Errorf("the engine has %d invocations running (engine_max_invocations)", total)
		})
}

// acquire takes a slot of the connection, one of the budget for the
// session's owner, and payload bytes of the body budget; false means the
// caller was answered with why not.
func (sess *session) acquire(fail func(code, msg string), payload int64) bool {
	select {
	case sess.slots <- struct{}{}:
	default:
		fail(codeTooManyInvocations, fmt.Sprintf("%d invocations are already running on this connection", cap(sess.slots)))
		return false
	}
	owner := auth.OwnerFrom(sess.ctx)
	if err := sess.s.invocations.Take(owner, 1); err != nil {
		<-sess.slots
		fail(codeTooManyInvocations, err.Error())
		return false
	}
	if b := sess.s.opts.BodyBudget; b != nil && payload > 0 {
		if err := b.Take(owner, payload); err != nil {
			sess.s.invocations.Give(owner, 1)
			<-sess.slots
			body := engineError(err)
			fail(body.Code, body.Message)
			return false
		}
	}
	return true
}

// release gives back what acquire took.
func (sess *session) release(payload int64) {
	owner := auth.OwnerFrom(sess.ctx)
	if b := sess.s.opts.BodyBudget; b != nil && payload > 0 {
		b.Give(owner, payload)
	}
	sess.s.invocations.Give(owner, 1)
	<-sess.slots
}
