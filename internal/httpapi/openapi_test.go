package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/jobs"
	"github.com/hutch-dev/hutch/internal/quota"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/alertsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/envsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/eventsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/filesvc"
	"github.com/hutch-dev/hutch/internal/sandbox/gitsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/imagesvc"
	"github.com/hutch-dev/hutch/internal/sandbox/interpsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/metricsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/networksvc"
	"github.com/hutch-dev/hutch/internal/sandbox/portsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/procsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/snapsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/secrets"
)

// TestEveryRouteIsDocumented: every route of the table carries its
// documentation (a function, or a summary of its own), and no method and
// path is routed twice.
func TestEveryRouteIsDocumented(t *testing.T) {
	s := &server{table: functions.New(fullDeps())}
	routes := map[string]bool{}
	for _, rt := range s.routes() {
		key := rt.method + " " + docPath(rt.path)
		if routes[key] {
			t.Errorf("route %s is in the table twice", key)
		}
		routes[key] = true
		if rt.doc.fn == "" && rt.doc.summary == "" {
			t.Errorf("%s has neither a function nor a summary", key)
		}
	}
}

// openAPIPath is the checked-in document.
const openAPIPath = "../../docs/openapi.json"

// TestOpenAPIDocumentIsCurrent: docs/openapi.json is what /openapi.json
// serves for the daemon's full table (every dependency present). Run
// with HUTCH_UPDATE_OPENAPI=1 to rewrite it.
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	s := &server{table: functions.New(fullDeps())}
	got, err := json.MarshalIndent(s.openAPIDoc(s.routes()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	// Every function a route names exists in the full table.
	for _, rt := range s.routes() {
		if _, ok := s.table.Lookup(rt.doc.fn); rt.doc.fn != "" && !ok {
			t.Errorf("%s %s names function %s, which the table does not have", rt.method, rt.path, rt.doc.fn)
		}
	}
	if os.Getenv("HUTCH_UPDATE_OPENAPI") == "1" {
		if err := os.WriteFile(filepath.Clean(openAPIPath), got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/openapi.json is out of date: run HUTCH_UPDATE_OPENAPI=1 go test ./internal/httpapi -run TestOpenAPIDocumentIsCurrent")
	}
	// And /openapi.json serves a document of every path.
	rec := httptest.NewRecorder()
	New(functions.New(fullDeps()), Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/openapi.json", nil))
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) < 50 {
		keys := make([]string, 0, len(doc.Paths))
		for k := range doc.Paths {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("/openapi.json: %d %v %v", rec.Code, err, keys)
	}
}

// fullDeps are dependencies of every kind the daemon has, so that the
// table holds every function (none is called).
func fullDeps() functions.Deps {
	var m *sandbox.Manager
	var j *jobs.Runner
	var n *networksvc.Service
	return functions.Deps{
		Sandboxes:   m,
		Files:       filesvc.New(m),
		Images:      imagesvc.New(nil, m.ImageBook(), nil, imagesvc.Policy{}),
		Metrics:     metricsvc.New(m, metricsvc.Limits{}),
		Processes:   procsvc.New(m, procsvc.Limits{}),
		Snapshots:   (*snapsvc.Service)(nil),
		Events:      eventsvc.New(m, nil),
		Webhooks:    noWebhooks{},
		Alerts:      alertsvc.New(m, eventsvc.New(m, nil), nil, nil),
		Jobs:        j,
		Interpreter: interpsvc.New(m, procsvc.New(m, procsvc.Limits{}), config.Default(), nil),
		Ports:       portsvc.New(m, portsvc.Options{}),
		Networks:    n,
		Environment: envsvc.New(m),
		Volumes:     volumesvc.New(nil),
		Git:         gitsvc.New(m, 0, nil),
		Quota:       quota.New(&config.Config{}, functions.Deps{}), // issue 38
		// issue 37
		Secrets:   (*secrets.Store)(nil),
		EgressLog: n,
	}
}

// noWebhooks stands for the daemon's webhook functions.
type noWebhooks struct{}

func (noWebhooks) WebhookDeliveries(context.Context, api.WebhookDeliveriesRequest) (api.WebhookDeliveriesResponse, error) {
	return api.WebhookDeliveriesResponse{}, nil
}
func (noWebhooks) CreateWebhook(context.Context, api.WebhookCreateRequest) (api.WebhookInfo, error) {
	return api.WebhookInfo{}, nil
}
func (noWebhooks) ListWebhooks(context.Context, struct{}) (api.WebhookListResponse, error) {
	return api.WebhookListResponse{}, nil
}
func (noWebhooks) DeleteWebhook(context.Context, api.WebhookRequest) (api.WebhookInfo, error) {
	return api.WebhookInfo{}, nil
}
