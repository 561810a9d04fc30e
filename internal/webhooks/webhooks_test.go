package webhooks

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// receiver records what a test endpoint was sent; it answers 500 to the
// first fail requests.
type receiver struct {
	mu   sync.Mutex
	fail int
	got  []*http.Request
	body [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got, r.body = append(r.got, req), append(r.body, b)
	if len(r.got) <= r.fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func TestDeliveriesAreSignedFilteredAndRetried(t *testing.T) {
	log, err := events.Open(filepath.Join(t.TempDir(), "events.db"), events.Options{MaxCount: 100, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	log.Append(events.Event{Type: "sandbox.created", Owner: "alice"}) // before Start: not sent
	ok, flaky := &receiver{}, &receiver{fail: 2}
	okSrv, flakySrv := httptest.NewServer(ok), httptest.NewServer(flaky)
	defer okSrv.Close()
	defer flakySrv.Close()
	d := Start(log, []Hook{
		{URL: okSrv.URL, Events: []string{"sandbox.*"}, Secret: "s3cret-s3cret-s3cret"},
		{URL: flakySrv.URL, Events: []string{"sandbox.stopped"}, Secret: "other-secret-value"},
	}, Options{Backoff: time.Millisecond})
	defer d.Close()
	log.Append(events.Event{Type: "exec.finished", Owner: "alice"})
	stopped := log.Append(events.Event{Type: "sandbox.stopped", Owner: "bob", SandboxID: "sb", Data: json.RawMessage(`{"cause":"idle"}`)})

	testutil.Eventually(t, 30*time.Second, func() bool { return ok.count() == 1 }, "the stop reaches the first hook")
	testutil.Eventually(t, 30*time.Second, func() bool { return flaky.count() == 3 }, "the third try reaches the flaky hook")
	req, body := ok.got[0], ok.body[0]
	if req.Header.Get(SignatureHeader) != Sign("s3cret-s3cret-s3cret", body) || req.Header.Get(EventHeader) != "sandbox.stopped" {
		t.Errorf("headers %v", req.Header)
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil || p.Type != "sandbox.stopped" || p.SandboxID != "sb" || p.Owner != "bob" || string(p.Data) != `{"cause":"idle"}` {
		t.Errorf("body %s: %v", body, err)
	}
	ids := map[string]bool{}
	for _, r := range flaky.got {
		ids[r.Header.Get(DeliveryHeader)] = true
	}
	if len(ids) != 1 {
		t.Errorf("the retries of one delivery carried %d delivery ids", len(ids))
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(d.Deliveries()) == 2 }, "both deliveries are recorded")
	if st := d.Stats(); st != (Stats{Delivered: 2, Attempts: 4}) {
		t.Errorf("stats %+v", st)
	}
	for _, dl := range d.Deliveries() {
		if !dl.Done || dl.EventID != stopped.ID {
			t.Errorf("delivery %+v", dl)
		}
		if dl.URL == flakySrv.URL && dl.Attempts != 3 {
			t.Errorf("the flaky hook's delivery took %d attempts, want 3", dl.Attempts)
		}
	}
}

func TestAFailingHookGivesUp(t *testing.T) {
	log, err := events.Open(filepath.Join(t.TempDir(), "events.db"), events.Options{MaxCount: 100, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	down := &receiver{fail: 1 << 30}
	srv := httptest.NewServer(down)
	defer srv.Close()
	d := Start(log, []Hook{{URL: srv.URL, Events: []string{"*"}, Secret: "x"}}, Options{Attempts: 3, Backoff: time.Millisecond})
	defer d.Close()
	log.Append(events.Event{Type: "a"})
	testutil.Eventually(t, 30*time.Second, func() bool { return len(d.Deliveries()) == 1 }, "the delivery gives up")
	if dl := d.Deliveries()[0]; dl.Done || dl.Attempts != 3 || dl.Status != 500 || dl.Error == "" {
		t.Errorf("delivery %+v", dl)
	}
	if st := d.Stats(); st != (Stats{Failed: 1, Attempts: 3}) {
		t.Errorf("stats %+v", st)
	}
}
