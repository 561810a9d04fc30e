package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// TestHealthRuntimes: /healthz lists the runtimes the daemon offers and
// how they isolate.
func TestHealthRuntimes(t *testing.T) {
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{
		Runtimes: []runtime.Info{{Name: "gvisor", Mode: "systrap", Abilities: "pause", Available: true, Default: true},
			{Name: "microvm", Abilities: "none", Unavailable: "qemu-system-x86_64 not found"}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:3111/healthz", nil))
	want := `"runtimes":[{"name":"gvisor","mode":"systrap","abilities":"pause","available":true,"default":true},{"name":"microvm","abilities":"none","available":false,"unavailable":"qemu-system-x86_64 not found"}]`
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/healthz = %d %s, want %s", rec.Code, rec.Body, want)
	}
}
