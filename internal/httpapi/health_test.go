package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/httpapi/httpapitest"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// TestHealthRuntimes: /healthz lists the runtimes the daemon offers and
// how they isolate.
func TestHealthRuntimes(t *testing.T) {
	h := httpapi.New(functions.New(httpapitest.DepsOf(&httpapitest.Fake{})), httpapi.Options{
		Runtimes: []runtime.Info{{Name: "microvm", Mode: "tcg", Abilities: "pause,stats"}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:3111/healthz", nil))
	want := `"runtimes":[{"name":"microvm","mode":"tcg","abilities":"pause,stats"}]`
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/healthz = %d %s, want %s", rec.Code, rec.Body, want)
	}
}
