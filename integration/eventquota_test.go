package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Event quotas (issue 33, item 2): one owner cannot erase another's
// events or grow the log past its bounds, a sandbox's flood of refused
// names makes a few events, and a stream that does not read is cut and
// resumes by id.

const malloryToken = "mallory-0123456789abcdef"

// publish records custom.<topic> with data as owner token, failing the
// test unless it is taken.
func (d *daemon) publish(token, topic, data string) api.EventRecord {
	d.t.Helper()
	status, body := d.raw("POST", "/v1/events", token, fmt.Sprintf(`{"topic":%q,"data":%s}`, topic, data))
	var rec api.EventRecord
	if status != 200 || json.Unmarshal([]byte(body), &rec) != nil {
		d.t.Fatalf("publish %s: %d %s", topic, status, body)
	}
	return rec
}

// listAs returns the events of owner token that query selects (one page).
func (d *daemon) listAs(token, query string) []api.EventRecord {
	d.t.Helper()
	status, body := d.raw("GET", "/v1/events?"+query, token, "")
	var list api.EventsResponse
	if status != 200 || json.Unmarshal([]byte(body), &list) != nil {
		d.t.Fatalf("list events %s: %d %s", query, status, body)
	}
	return list.Events
}

// TestEventQuotas: mallory's flood of small events past the log's count
// drops only her own; her flood of big ones keeps the log (in its own
// accounting, and its file) under events_max_mb; an event over 64 KiB is
// refused with S001 and recorded nowhere.
func TestEventQuotas(t *testing.T) {
	d := startDaemon(t, baseConfig("api_tokens:\n  alice: "+aliceToken+"\n  mallory: "+malloryToken+"\n"+
		"events_max_count: 1000\nevents_max_mb: 4\nevents_max_mb_per_owner: 4\n"))
	for i := range 5 {
		d.publish(aliceToken, "deploy", strconv.Itoa(i))
	}
	for i := range 1100 {
		d.publish(malloryToken, "flood", strconv.Itoa(i))
	}
	if got := d.listAs(aliceToken, "type=custom.*"); len(got) != 5 {
		t.Fatalf("alice keeps %d of her 5 events after mallory's flood of 1100 into a log of 1000", len(got))
	}
	if got := d.listAs(malloryToken, "limit=1000"); len(got) != 995 || string(got[994].Data) != "1099" {
		t.Errorf("mallory keeps %d events, want her newest 995", len(got))
	}

	big := `"` + strings.Repeat("x", 60<<10) + `"`
	for range 200 { // 12 MiB into a log of 4
		d.publish(malloryToken, "big", big)
	}
	metrics := d.scrape(aliceToken)
	if kept := metricValue(metrics, "hutch_events_kept_bytes"); kept <= 0 || kept > 4<<20 {
		t.Errorf("the log holds %v bytes after 12 MiB of events into events_max_mb 4:\n%s", kept, grepLines(metrics, "hutch_event"))
	}
	if got := d.listAs(aliceToken, "type=custom.*"); len(got) != 5 {
		t.Errorf("alice keeps %d of her 5 events after mallory's big events", len(got))
	}
	// The file holds what memory does: it is written every 200 ms, and
	// grows by doubling, so twice the bound twice over is its ceiling.
	file := filepath.Join(d.dataDir, "events.db")
	if !testutil.Poll(30*time.Second, func() bool { fi, err := os.Stat(file); return err == nil && fi.Size() > 0 }) {
		t.Fatalf("no %s", file)
	}
	d.terminate()
	if fi, err := os.Stat(file); err != nil || fi.Size() > 16<<20 {
		t.Errorf("events.db after 12 MiB of events into events_max_mb 4: %v bytes (%v)", fi.Size(), err)
	}
	d.start()
	if got := d.listAs(aliceToken, "type=custom.*"); len(got) != 5 {
		t.Errorf("alice keeps %d of her 5 events after a restart", len(got))
	}

	last := d.listAs(malloryToken, "type=custom.big&limit=1000")
	status, body := d.raw("POST", "/v1/events", malloryToken, `{"topic":"huge","data":"`+strings.Repeat("x", 64<<10)+`"}`)
	if status != 400 || !strings.Contains(body, "S001") || !strings.Contains(body, "at most 65536") {
		t.Errorf("an event over 64 KiB: %d %.200s", status, body)
	}
	if now := d.listAs(malloryToken, "type=custom.*&after="+last[len(last)-1].ID); len(now) != 0 {
		t.Errorf("the refused event was recorded: %+v", now[0].Type)
	}
}

// TestSlowEventStreamIsCut: a stream whose client reads nothing while
// 20 MiB of events are recorded is cut once its backlog passes its
// bound: read afterwards, it ends with S218 after the events it was
// handed, and a stream resumed after the last of them gets the rest.
func TestSlowEventStreamIsCut(t *testing.T) {
	// The write timeout is long so that only the backlog's bound cuts.
	d := startDaemon(t, baseConfig("events_max_mb: 64\nevents_max_mb_per_owner: 64\nhttp_write_timeout_secs: 600\n"))
	req, err := http.NewRequest("GET", d.url+"/v1/events/stream?type=custom.*&after=now", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	const n = 400
	data := `"` + strings.Repeat("x", 50<<10) + `"`
	var sent []api.EventRecord
	for range n {
		sent = append(sent, d.publish("", "slow", data))
	}

	events := readSSE(resp.Body)
	if ev := nextEvent(t, events); ev.typ != api.EventStreamOpen {
		t.Fatalf("the stream began with %s", ev.typ)
	}
	got := 0
	var end sseEvent
	for got < n {
		ev := nextEvent(t, events)
		if ev.typ != "custom.slow" {
			end = ev
			break
		}
		if ev.id != sent[got].ID {
			t.Fatalf("event %d of the stream is %s, want %s", got, ev.id, sent[got].ID)
		}
		got++
	}
	if got == n || end.typ != "error" || !strings.Contains(string(end.data), "S218") || !strings.Contains(string(end.data), "resume after") {
		t.Fatalf("a stream that read nothing while %d events of 50 KiB were recorded got %d, then %s %.300s", n, got, end.typ, end.data)
	}
	if got == 0 {
		t.Fatal("the stream was cut before the kernel's buffers held any event")
	}

	resumed := d.eventStream(t, "type=custom.*", sent[got-1].ID)
	for i := got; i < n; i++ {
		if ev := nextEvent(t, resumed); ev.id != sent[i].ID {
			t.Fatalf("the resumed stream's event %d is %s, want %s", i, ev.id, sent[i].ID)
		}
	}

	// The Go client (hutch events -f) resumes by itself: a callback that
	// holds the first event while the flood is recorded still gets every
	// event, in order, once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := make(chan struct{})
	received := make(chan string, 2*n)
	done := make(chan error, 1)
	go func() {
		// After the last event so far, not "now": the stream may open
		// after the first event below is recorded.
		done <- d.c.StreamEvents(ctx, api.EventsRequest{Type: "custom.again", After: sent[n-1].ID}, func(e api.EventRecord) error {
			received <- e.ID
			<-hold
			return nil
		})
	}()
	first := d.publish("", "again", data)
	select {
	case id := <-received:
		if id != first.ID {
			t.Fatalf("the client's first event is %s, want %s", id, first.ID)
		}
	case err := <-done:
		t.Fatalf("the client's stream ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the client got no event within 60 s")
	}
	cuts := metricValue(d.scrape(""), "hutch_event_subscribers_cut_total")
	want := []string{first.ID}
	for range n {
		want = append(want, d.publish("", "again", data).ID)
	}
	if after := metricValue(d.scrape(""), "hutch_event_subscribers_cut_total"); after <= cuts {
		t.Fatalf("a client holding its callback was not cut: %v cuts before the flood, %v after", cuts, after)
	}
	close(hold)
	for i := 1; i < len(want); i++ {
		select {
		case id := <-received:
			if id != want[i] {
				t.Fatalf("the client's event %d is %s, want %s", i, id, want[i])
			}
		case err := <-done:
			t.Fatalf("the client's stream ended after %d events: %v", i, err)
		case <-time.After(60 * time.Second):
			t.Fatalf("the client got %d of %d events", i, len(want))
		}
	}
}

// dnsFloodScript asks the sandbox's nameserver, over UDP and one query at
// a time, for one name 3000 times, with 40 other names once each half-way,
// and prints how many it sent and how many were answered NXDOMAIN.
const dnsFloodScript = `
import socket, struct
ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.connect((ns, 53))
def query(name, qid):
    qname = b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\0'
    return struct.pack('>HHHHHH', qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack('>HH', 1, 1)
names = ['flood.denied.test'] * 1500 + ['n%d.denied.test' % i for i in range(40)] + ['flood.denied.test'] * 1500
sent = refused = 0
for i, name in enumerate(names):
    s.send(query(name, i))
    sent += 1
    while True:
        try:
            r = s.recv(512)
        except socket.timeout:
            break
        if struct.unpack('>H', r[:2])[0] == i:
            refused += (r[3] & 15) == 3
            break
print(sent, refused)
`

// TestDeniedNameFloodIsCoalesced: a network sandbox asking thousands of
// times for names its policy refuses makes a few egress.denied events,
// whose counts add up to the refused queries.
func TestDeniedNameFloodIsCoalesced(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{AllowOut: []string{"allowed.test"}}})
	r := d.execReq(api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", dnsFloodScript}, TimeoutMs: 240000})
	var sent, refused int
	if _, err := fmt.Sscan(r.Stdout, &sent, &refused); err != nil || !r.Success || sent != 3040 || refused < sent*9/10 {
		t.Fatalf("the flood script: %+v", r)
	}
	var names []map[string]any
	var sum int
	count := func() bool {
		names, sum = nil, 0
		for _, e := range d.eventsOf(id, api.EventEgressDenied) {
			if _, counted := e["packets"]; counted {
				continue // refused connections: none here
			}
			names = append(names, e)
			n, _ := e["count"].(float64)
			sum += int(n)
		}
		return sum >= refused
	}
	// The counts of the last interval are recorded at its end (5 s).
	if !testutil.Poll(60*time.Second, count) || sum > sent {
		t.Fatalf("%d queries, %d refused: %d egress.denied events count %d", sent, refused, len(names), sum)
	}
	t.Logf("%d queries, %d refused: %d egress.denied events count %d", sent, refused, len(names), sum)
	if len(names) > 100 {
		t.Errorf("%d refused queries made %d egress.denied events", refused, len(names))
	}
	flood := 0.0
	for _, e := range names {
		name, _ := e["name"].(string)
		if other, _ := e["other_names"].(bool); (name == "") != other || (name != "" && !strings.HasSuffix(name, ".denied.test")) {
			t.Errorf("event %v", e)
		}
		if name == "flood.denied.test" {
			flood = max(flood, e["count"].(float64))
		}
	}
	if flood <= 1 {
		t.Errorf("no event of flood.denied.test counts more than one refusal: %v", names)
	}
}
