// Package webhooks delivers events of the event log to the HTTP endpoints
// an operator configured (config webhooks): each matching event is POSTed
// as JSON, signed with the hook's secret (HMAC-SHA256), and retried with
// backoff until it is delivered or its attempts run out. A hook reads the
// log through its own subscription, so a slow or failing endpoint never
// slows the daemon: when it falls behind, it resumes from the log after
// the last event it handled, and misses nothing the log still holds.
package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/internal/events"
)

// Hook is one endpoint.
type Hook struct {
	// ID names it: config-<n> for the configured ones, which cannot be
	// removed, a random id for those added at run time.
	ID  string
	URL string
	// Events are the types, or path.Match patterns, it receives.
	Events []string
	Secret string
}

// Delivery is what became of one event sent to one hook.
type Delivery struct {
	ID       string    `json:"id"`
	HookID   string    `json:"webhook_id"`
	URL      string    `json:"url"`
	EventID  uint64    `json:"event_id"`
	Type     string    `json:"type"`
	Attempts int       `json:"attempts"`
	Status   int       `json:"status,omitempty"`
	Error    string    `json:"error,omitempty"`
	Done     bool      `json:"delivered"`
	Time     time.Time `json:"time"`
}

// Options tune delivery; zero fields take defaults.
type Options struct {
	// Attempts bounds the tries of one delivery (default 5).
	Attempts int
	// Backoff is the wait before the second try, doubled after each
	// failure (default 1 s).
	Backoff time.Duration
	// Timeout bounds one try (default 10 s).
	Timeout time.Duration
	// Client sends the requests (default: one with no redirects).
	Client *http.Client
	Logger *slog.Logger
}

// Stats count deliveries since the daemon started.
type Stats struct {
	// Delivered and Failed count the deliveries that were taken and those
	// whose attempts ran out; Attempts counts every try.
	Delivered, Failed, Attempts uint64
}

// Stats returns the counts so far.
func (d *Dispatcher) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// keptDeliveries is how many deliveries Deliveries remembers.
const keptDeliveries = 1000

// Dispatcher runs the hooks.
type Dispatcher struct {
	log  *events.Log
	opts Options
	ctx  context.Context

	mu         sync.Mutex
	hooks      map[string]*running // by id
	added      uint64              // hooks added so far
	deliveries []Delivery          // newest last, at most keptDeliveries
	stats      Stats

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// running is a hook and the end of its delivery loop.
type running struct {
	hook   Hook
	cancel context.CancelFunc
	// seq orders the hooks as they were added.
	seq uint64
}

// ConfigPrefix begins the id of a configured hook.
const ConfigPrefix = "config-"

// Start runs a delivery loop per hook over log, from the events after
// the newest one now (a hook is not sent the past). The hooks get ids
// config-1, config-2, ...
func Start(log *events.Log, hooks []Hook, opts Options) *Dispatcher {
	if opts.Attempts <= 0 {
		opts.Attempts = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{log: log, opts: opts, ctx: ctx, cancel: cancel, hooks: map[string]*running{}}
	for i, h := range hooks {
		h.ID = ConfigPrefix + strconv.Itoa(i+1)
		d.Add(h)
	}
	return d
}

// Add runs hook h (its ID set) from the events after the newest one now.
func (d *Dispatcher) Add(h Hook) {
	ctx, cancel := context.WithCancel(d.ctx)
	after := d.log.Last()
	d.mu.Lock()
	if old, ok := d.hooks[h.ID]; ok {
		old.cancel()
	}
	d.added++
	d.hooks[h.ID] = &running{hook: h, cancel: cancel, seq: d.added}
	d.mu.Unlock()
	d.wg.Go(func() { d.run(ctx, h, after) })
}

// Remove stops hook id; a delivery under way is abandoned. It reports
// whether there was such a hook.
func (d *Dispatcher) Remove(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.hooks[id]
	if ok {
		r.cancel()
		delete(d.hooks, id)
	}
	return ok
}

// Hooks returns the hooks running in the order they were added: the
// configured ones first.
func (d *Dispatcher) Hooks() []Hook {
	d.mu.Lock()
	defer d.mu.Unlock()
	rs := make([]*running, 0, len(d.hooks))
	for _, r := range d.hooks {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	out := make([]Hook, len(rs))
	for i, r := range rs {
		out[i] = r.hook
	}
	return out
}

// Close stops delivering; a delivery under way is abandoned.
func (d *Dispatcher) Close() {
	d.cancel()
	d.wg.Wait()
}

// Deliveries returns the latest deliveries, newest first.
func (d *Dispatcher) Deliveries() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Delivery, len(d.deliveries))
	for i, dl := range d.deliveries {
		out[len(out)-1-i] = dl
	}
	return out
}

// run delivers h's events, one at a time in order, resubscribing after
// the last one handled whenever the log drops it for falling behind.
func (d *Dispatcher) run(ctx context.Context, h Hook, after uint64) {
	for ctx.Err() == nil {
		past, sub := d.log.Subscribe(events.Filter{AllOwners: true, After: after})
		handle := func(e events.Event) {
			after = e.ID
			if wants(h, e.Type) {
				d.deliver(ctx, h, e)
			}
		}
		for _, e := range past {
			handle(e)
		}
		for {
			e, err := sub.Next(ctx)
			if errors.Is(err, events.ErrClosed) {
				return // the log closed
			}
			if err != nil { // cut for falling behind, or ctx ended
				sub.Close()
				break
			}
			handle(e)
		}
	}
}

// wants reports whether h receives events of type typ.
func wants(h Hook, typ string) bool {
	for _, p := range h.Events {
		if ok, _ := path.Match(p, typ); ok {
			return true
		}
	}
	return false
}

// deliver sends e to h until it is taken (a 2xx answer) or the attempts
// run out, and records the outcome.
func (d *Dispatcher) deliver(ctx context.Context, h Hook, e events.Event) {
	body, err := json.Marshal(payload{ID: strconv.FormatUint(e.ID, 10), Time: e.Time.Format(time.RFC3339Nano), Type: e.Type,
		SandboxID: e.SandboxID, Owner: e.Owner, Data: e.Data})
	if err != nil {
		return
	}
	dl := Delivery{ID: uuid.NewString(), HookID: h.ID, URL: h.URL, EventID: e.ID, Type: e.Type}
	wait := d.opts.Backoff
	for dl.Attempts < d.opts.Attempts {
		dl.Attempts++
		dl.Status, err = d.post(ctx, h, dl.ID, e.Type, body)
		if err == nil {
			dl.Done, dl.Error = true, ""
			break
		}
		dl.Error = err.Error()
		if dl.Attempts == d.opts.Attempts {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
	if !dl.Done {
		d.opts.Logger.Warn("webhook delivery failed", "url", h.URL, "event", e.ID, "attempts", dl.Attempts, "err", dl.Error)
	}
	dl.Time = time.Now().UTC()
	d.mu.Lock()
	d.stats.Attempts += uint64(dl.Attempts)
	if dl.Done {
		d.stats.Delivered++
	} else {
		d.stats.Failed++
	}
	d.deliveries = append(d.deliveries, dl)
	if over := len(d.deliveries) - keptDeliveries; over > 0 {
		d.deliveries = d.deliveries[over:]
	}
	d.mu.Unlock()
}

// payload is the JSON body of a delivery.
type payload struct {
	ID        string          `json:"id"`
	Time      string          `json:"time"`
	Type      string          `json:"type"`
	SandboxID string          `json:"sandbox_id,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body with the
// hook's secret>"; DeliveryHeader the delivery id, the same on every try.
const (
	SignatureHeader = "Hutch-Signature"
	DeliveryHeader  = "Hutch-Delivery"
	EventHeader     = "Hutch-Event"
)

// Sign is the signature of body with secret, as SignatureHeader carries it.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// post makes one try: a non-2xx answer is an error.
func (d *Dispatcher) post(ctx context.Context, h Hook, delivery, typ string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hutch-webhooks")
	req.Header.Set(SignatureHeader, Sign(h.Secret, body))
	req.Header.Set(DeliveryHeader, delivery)
	req.Header.Set(EventHeader, typ)
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
