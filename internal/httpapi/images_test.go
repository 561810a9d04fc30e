package httpapi_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

func TestImageRoutes(t *testing.T) {
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantField          string // a top-level field of the answer
		wantCall           functionstest.Call
	}{
		{"GET", "/v1/catalog", "", 200, "images", functionstest.Call{Method: "Catalog", Req: api.CatalogRequest{}}},
		{"POST", "/v1/functions/sandbox::catalog::list", "", 200, "images", functionstest.Call{Method: "Catalog", Req: api.CatalogRequest{}}},
		{"GET", "/v1/images", "", 200, "images", functionstest.Call{Method: "ImageList", Req: api.ImageListRequest{}}},
		{"POST", "/v1/images/python", "", 200, "state", functionstest.Call{Method: "ImagePull", Req: api.ImagePullRequest{Name: "python"}}},
		{"DELETE", "/v1/images/node", "", 200, "removed", functionstest.Call{Method: "ImageRemove", Req: api.ImageRemoveRequest{Name: "node"}}},
		{"DELETE", "/v1/images/ghcr.io%2Facme%2Fapp:1", "", 403, "error",
			functionstest.Call{Method: "ImageRemove", Req: api.ImageRemoveRequest{Name: "ghcr.io/acme/app:1"}}},
		{"POST", "/v1/functions/hutch::image::pull", `{"name":"node"}`, 200, "state",
			functionstest.Call{Method: "ImagePull", Req: api.ImagePullRequest{Name: "node"}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			fake := &functionstest.Fake{}
			status, body, raw := do(t, httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{}), tt.method, tt.path, tt.body, nil)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, raw)
			}
			if _, ok := body[tt.wantField]; !ok {
				t.Errorf("answer lacks %q: %s", tt.wantField, raw)
			}
			if calls := fake.Calls(); len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.wantCall) {
				t.Errorf("calls = %+v, want [%+v]", calls, tt.wantCall)
			}
		})
	}
	// A body that names another image than the URL is refused.
	fake := &functionstest.Fake{}
	status, _, raw := do(t, httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{}), "POST", "/v1/images/python", `{"name":"node"}`, nil)
	if status != http.StatusBadRequest || len(fake.Calls()) != 0 {
		t.Errorf("conflicting name: status %d, calls %v: %s", status, fake.Calls(), raw)
	}
}
