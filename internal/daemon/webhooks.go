package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/storefmt"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// maxAddedWebhooks bounds the webhooks added at run time.
const maxAddedWebhooks = 32

// webhookAdmin serves the hutch::webhook::* functions over the
// dispatcher, to operators only: a webhook is sent every owner's events.
// The webhooks added at run time are kept in a file of the data dir
// (secrets included, so it is the daemon's alone) and run again at start.
type webhookAdmin struct {
	cfg  *config.Config
	d    *webhooks.Dispatcher
	path string

	mu sync.Mutex // serializes changes of the file
}

// addedWebhook is a webhook added at run time, as the file keeps it.
type addedWebhook struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Secret string   `json:"secret"`
}

// startAddedWebhooks runs the webhooks the file at path keeps; a bad
// entry is skipped with a warning.
func startAddedWebhooks(cfg *config.Config, d *webhooks.Dispatcher, path string, log *slog.Logger) (*webhookAdmin, error) {
	w := &webhookAdmin{cfg: cfg, d: d, path: path}
	hooks, err := w.read()
	if err != nil {
		return nil, err
	}
	for _, h := range hooks {
		if errs := (config.Webhook{URL: h.URL, Events: h.Events, Secret: h.Secret}).Check(); len(errs) > 0 || h.ID == "" {
			log.Warn("skipping a kept webhook", "id", h.ID, "err", errors.Join(errs...))
			continue
		}
		d.Add(webhooks.Hook{ID: h.ID, URL: h.URL, Events: h.Events, Secret: h.Secret})
	}
	return w, nil
}

func (w *webhookAdmin) read() ([]addedWebhook, error) {
	b, err := os.ReadFile(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the webhooks: %w", err)
	}
	var doc webhooksDoc
	if storefmt.IsArray(b) {
		err = json.Unmarshal(b, &doc.Webhooks)
	} else if err = json.Unmarshal(b, &doc); err == nil {
		err = storefmt.JSON("the webhooks "+w.path, doc.Format, webhooksFormat)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the webhooks %s: %w", w.path, err)
	}
	return doc.Webhooks, nil
}

// webhooksFormat is the format of webhooks.json (storefmt): 0, before
// formats, was a bare list; 1 is {"format": 1, "webhooks": [...]}. A file
// of format 0 is read as it is and written in format 1.
const webhooksFormat = 1

// webhooksDoc is webhooks.json.
type webhooksDoc struct {
	Format   int            `json:"format"`
	Webhooks []addedWebhook `json:"webhooks"`
}

// write replaces the file with hooks, atomically.
func (w *webhookAdmin) write(hooks []addedWebhook) error {
	b, err := json.MarshalIndent(webhooksDoc{Format: webhooksFormat, Webhooks: hooks}, "", "  ")
	if err != nil {
		return err
	}
	tmp := w.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, w.path)
}

func (w *webhookAdmin) operator(ctx context.Context, what string) error {
	if !w.cfg.IsAdmin(auth.OwnerFrom(ctx)) {
		return errdefs.New(errdefs.CodeOperatorOnly, "only an operator may %s: webhooks carry every owner's events", what)
	}
	return nil
}

func (w *webhookAdmin) WebhookDeliveries(ctx context.Context, _ api.WebhookDeliveriesRequest) (api.WebhookDeliveriesResponse, error) {
	if err := w.operator(ctx, "read webhook deliveries"); err != nil {
		return api.WebhookDeliveriesResponse{}, err
	}
	out := api.WebhookDeliveriesResponse{Deliveries: []api.WebhookDelivery{}}
	for _, d := range w.d.Deliveries() {
		out.Deliveries = append(out.Deliveries, api.WebhookDelivery{ID: d.ID, WebhookID: d.HookID, URL: d.URL, EventID: strconv.FormatUint(d.EventID, 10),
			Type: d.Type, Attempts: d.Attempts, Status: d.Status, Error: d.Error, Delivered: d.Done, Time: d.Time.Format(time.RFC3339Nano)})
	}
	return out, nil
}

// CreateWebhook adds a webhook and keeps it (hutch::webhook::create).
func (w *webhookAdmin) CreateWebhook(ctx context.Context, req api.WebhookCreateRequest) (api.WebhookInfo, error) {
	if err := w.operator(ctx, "add a webhook"); err != nil {
		return api.WebhookInfo{}, err
	}
	if errs := (config.Webhook{URL: req.URL, Events: req.Events, Secret: req.Secret}).Check(); len(errs) > 0 {
		return api.WebhookInfo{}, errdefs.Malformed("%v", errors.Join(errs...))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	hooks, err := w.read()
	if err != nil {
		return api.WebhookInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "adding a webhook")
	}
	if len(hooks) >= maxAddedWebhooks {
		return api.WebhookInfo{}, errdefs.New(errdefs.CodeCapacity, "%d webhooks were added already; delete one first", len(hooks))
	}
	h := addedWebhook{ID: uuid.NewString(), URL: req.URL, Events: req.Events, Secret: req.Secret}
	if err := w.write(append(hooks, h)); err != nil {
		return api.WebhookInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "keeping a webhook")
	}
	w.d.Add(webhooks.Hook{ID: h.ID, URL: h.URL, Events: h.Events, Secret: h.Secret})
	return api.WebhookInfo{WebhookID: h.ID, URL: h.URL, Events: h.Events}, nil
}

// ListWebhooks lists every webhook, without secrets (hutch::webhook::list).
func (w *webhookAdmin) ListWebhooks(ctx context.Context, _ struct{}) (api.WebhookListResponse, error) {
	if err := w.operator(ctx, "list webhooks"); err != nil {
		return api.WebhookListResponse{}, err
	}
	out := api.WebhookListResponse{Webhooks: []api.WebhookInfo{}}
	for _, h := range w.d.Hooks() {
		out.Webhooks = append(out.Webhooks, hookInfo(h))
	}
	return out, nil
}

// DeleteWebhook stops and forgets a webhook added at run time
// (hutch::webhook::delete).
func (w *webhookAdmin) DeleteWebhook(ctx context.Context, req api.WebhookRequest) (api.WebhookInfo, error) {
	if err := w.operator(ctx, "delete a webhook"); err != nil {
		return api.WebhookInfo{}, err
	}
	if strings.HasPrefix(req.WebhookID, webhooks.ConfigPrefix) {
		return api.WebhookInfo{}, errdefs.Malformed("webhook %s comes from the config file; remove it there", req.WebhookID)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	hooks, err := w.read()
	if err != nil {
		return api.WebhookInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "deleting a webhook")
	}
	for i, h := range hooks {
		if h.ID != req.WebhookID {
			continue
		}
		if err := w.write(append(hooks[:i:i], hooks[i+1:]...)); err != nil {
			return api.WebhookInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "deleting a webhook")
		}
		w.d.Remove(h.ID)
		return api.WebhookInfo{WebhookID: h.ID, URL: h.URL, Events: h.Events}, nil
	}
	return api.WebhookInfo{}, errdefs.New(errdefs.CodeNotFound, "no webhook %q", clipID(req.WebhookID))
}

func hookInfo(h webhooks.Hook) api.WebhookInfo {
	return api.WebhookInfo{WebhookID: h.ID, URL: h.URL, Events: h.Events, Configured: strings.HasPrefix(h.ID, webhooks.ConfigPrefix)}
}

func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// hooksOf is the webhooks block as the dispatcher takes it.
func hooksOf(cfg []config.Webhook) []webhooks.Hook {
	out := make([]webhooks.Hook, len(cfg))
	for i, h := range cfg {
		out[i] = webhooks.Hook{URL: h.URL, Events: h.Events, Secret: h.Secret}
	}
	return out
}
