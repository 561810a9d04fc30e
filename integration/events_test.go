package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// Events (issue 18, first part): what happens to a sandbox is recorded,
// streamed as it happens (SSE, resuming after Last-Event-ID), listed, and
// kept across a daemon restart.

// eventStream opens GET /v1/events/stream?query as SSE, after lastID when
// it is not "".
func (d *daemon) eventStream(t *testing.T, query, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", d.url+"/v1/events/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := readSSE(resp.Body)
	if ev := nextEvent(t, events); ev.typ != api.EventStreamOpen {
		t.Fatalf("the stream began with %s %s", ev.typ, ev.data)
	}
	return events
}

func TestEvents(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	live := d.eventStream(t, "", "")
	id := d.create(api.CreateRequest{Image: "python", IdleTimeoutSecs: 2})
	d.exec(id, "true")

	// The subscriber sees the sandbox created, ready, the exec, then the
	// sandbox stopped when idle, in that order.
	want := []string{api.EventSandboxCreated, api.EventSandboxReady, api.EventExecStarted, api.EventExecFinished, api.EventSandboxStopped}
	var seen []sseEvent
	for len(seen) < len(want) {
		ev := nextEvent(t, live)
		var rec api.EventRecord
		if err := json.Unmarshal(ev.data, &rec); err != nil || ev.id != rec.ID {
			t.Fatalf("event %+v: %+v %v", ev, rec, err)
		}
		if rec.SandboxID != id {
			continue // an image built for it, say
		}
		if ev.typ != want[len(seen)] {
			t.Fatalf("event %d is %s %s, want %s", len(seen), ev.typ, ev.data, want[len(seen)])
		}
		seen = append(seen, ev)
	}
	if stop := seen[4]; !strings.Contains(string(stop.data), `"cause":"idle"`) {
		t.Fatalf("the stop event says %s", stop.data)
	}

	// A stream resumed after the exec started starts with its end.
	resumed := d.eventStream(t, "sandbox_id="+id, seen[2].id)
	if ev := nextEvent(t, resumed); ev.typ != api.EventExecFinished || !strings.Contains(string(ev.data), `"exit_code":0`) {
		t.Errorf("after Last-Event-ID %s: %s %s", seen[2].id, ev.typ, ev.data)
	}

	// Published events go to the same log.
	if status, body := d.raw("POST", "/v1/functions/sandbox::events::publish", "", `{"topic":"deploy","data":{"v":2}}`); status != 200 || !strings.Contains(body, `"custom.deploy"`) {
		t.Fatalf("publish: %d %s", status, body)
	}
	if status, body := d.raw("POST", "/v1/events", "", `{"topic":"Bad Topic"}`); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("publish with a bad topic: %d %s", status, body)
	}

	// Listed through the CLI, and kept across a restart.
	d.terminate()
	d.start()
	out, errOut, code := d.cli("", "events", "--sandbox", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) || !strings.Contains(lines[0], "sandbox.created") || !strings.Contains(lines[3], "exec.finished") || !strings.Contains(lines[4], "sandbox.stopped") {
		t.Fatalf("hutch events after a restart: code %d stdout %q stderr %q", code, out, errOut)
	}
	list, err := d.c.ListEvents(ctx, api.EventsRequest{Type: "custom.*"})
	if err != nil || len(list.Events) != 1 || string(list.Events[0].Data) != `{"v":2}` {
		t.Errorf("custom events after a restart: %+v %v", list, err)
	}
	if status, body := d.raw("GET", "/v1/sandboxes/"+id+"/events?type=sandbox.stopped", "", ""); status != 200 || !strings.Contains(body, `"sandbox.stopped"`) || strings.Contains(body, `"sandbox.created"`) {
		t.Errorf("one sandbox's stop event: %d %s", status, body)
	}
	page, err := d.c.ListEvents(ctx, api.EventsRequest{Limit: 1})
	if err != nil || len(page.Events) != 1 || page.Next == "" {
		t.Errorf("a page of one: %+v %v", page, err)
	}
}

// TestWebhooks: a receiver run by the test gets signed deliveries of the
// events it asked for, the third try of one it failed twice, and the
// deliveries are listed.
func TestWebhooks(t *testing.T) {
	const secret = "test-secret-0123456789"
	var mu sync.Mutex
	var got []string // event types, in order, of the answered requests
	failsLeft := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(webhooks.SignatureHeader) != webhooks.Sign(secret, body) {
			t.Errorf("a delivery with a bad signature: %s", body)
		}
		mu.Lock()
		defer mu.Unlock()
		typ := r.Header.Get(webhooks.EventHeader)
		if typ == api.EventSandboxStopped && failsLeft > 0 {
			failsLeft--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got = append(got, typ)
	}))
	defer srv.Close()
	d := startDaemon(t, baseConfig(fmt.Sprintf("webhooks:\n  - url: %s/hook\n    events: [\"sandbox.*\"]\n    secret: %s\n", srv.URL, secret)))
	id := d.create(api.CreateRequest{Image: "python"})
	d.exec(id, "true") // exec.finished: not asked for
	if _, err := d.c.Stop(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 }) {
		mu.Lock()
		t.Fatalf("the receiver got %v", got)
	}
	mu.Lock()
	if got[0] != api.EventSandboxCreated || got[1] != api.EventSandboxReady || got[2] != api.EventSandboxStopped {
		t.Errorf("deliveries %v", got)
	}
	mu.Unlock()
	var list api.WebhookDeliveriesResponse
	if err := d.c.Call(context.Background(), api.FnWebhookDeliveries, struct{}{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Deliveries) != 3 || !list.Deliveries[0].Delivered || list.Deliveries[0].Attempts != 3 || list.Deliveries[0].Type != api.EventSandboxStopped {
		t.Errorf("deliveries listed: %+v", list.Deliveries)
	}
	if status, body := d.raw("GET", "/metrics", "", ""); status != 200 || !strings.Contains(body, `hutch_webhook_deliveries_total{result="delivered"} 3`) || !strings.Contains(body, "hutch_webhook_attempts_total 5") {
		t.Errorf("webhook metrics: %d\n%s", status, grepLines(body, "hutch_webhook"))
	}
}

// TestMetricsStream: a sandbox's metrics arrive every interval until it
// stops, which ends the stream with S004.
func TestMetricsStream(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	req, err := http.NewRequest("GET", d.url+"/v1/sandboxes/"+id+"/metrics/stream?interval_ms=100", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	for range 2 {
		ev := nextEvent(t, events)
		var m api.MetricsResponse
		if ev.typ != api.EventMetrics || json.Unmarshal(ev.data, &m) != nil || m.SandboxID != id || m.MemoryBytes == 0 {
			t.Fatalf("event %s %s", ev.typ, ev.data)
		}
	}
	if _, err := d.c.Stop(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, events)
		if ev.typ == "error" {
			if !strings.Contains(string(ev.data), "S004") {
				t.Errorf("the stream ended with %s", ev.data)
			}
			break
		}
	}
	if status, body := d.raw("GET", "/v1/sandboxes/"+id+"/metrics/stream?interval_ms=5", "", ""); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("a 5 ms interval: %d %s", status, body)
	}
}

// TestAlertStopsASandboxThatTakesTooMuchMemory: an alert on memory above
// 100 MiB with action stop stops a sandbox that holds 200 MiB, and its
// events say why.
func TestAlertStopsASandboxThatTakesTooMuchMemory(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python", MemoryMB: 512})
	out, errOut, code := d.cli("", "alert", "create", id, "--metric", "memory", "--above", "100", "--action", "stop")
	if code != 0 || len(strings.TrimSpace(out)) != 36 {
		t.Fatalf("hutch alert create: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-c",
		"import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(3600)"}}); err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(120*time.Second, func() bool { return sandboxState(t, d, id).Stopped }) {
		t.Fatal("the sandbox was not stopped by its alert")
	}
	if info := sandboxState(t, d, id); info.StopCause != "alert" || !strings.Contains(info.StopReason, "memory") {
		t.Errorf("stopped with %q %q", info.StopCause, info.StopReason)
	}
	h, err := d.c.AlertHistory(ctx, id)
	if err != nil || len(h.Events) != 1 || !strings.Contains(string(h.Events[0].Data), `"action":"stop"`) {
		t.Errorf("alert history: %+v %v", h, err)
	}
}

// TestDiskMetricAndAlert: the files a sandbox writes count in its
// disk_bytes, freed when deleted, and a disk alert fires on them.
func TestDiskMetricAndAlert(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	before, err := d.c.Metrics(ctx, id)
	if err != nil || before.DiskLimitBytes == 0 {
		t.Fatalf("metrics %+v %v", before, err)
	}
	alert, err := d.c.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertDisk, Threshold: 20})
	if err != nil {
		t.Fatal(err)
	}
	d.exec(id, "sh", "-c", "head -c 40000000 /dev/urandom > /root/big")
	after, err := d.c.Metrics(ctx, id)
	if err != nil || after.DiskBytes < before.DiskBytes+39_000_000 {
		t.Fatalf("disk_bytes %d after writing 40 MB, %d before (%v)", after.DiskBytes, before.DiskBytes, err)
	}
	if !testutil.Poll(60*time.Second, func() bool {
		list, err := d.c.ListEvents(ctx, api.EventsRequest{SandboxID: id, Type: api.EventAlertFired})
		return err == nil && len(list.Events) == 1 && strings.Contains(string(list.Events[0].Data), alert.AlertID)
	}) {
		t.Fatal("the disk alert did not fire")
	}
	d.exec(id, "rm", "/root/big")
	// gVisor gives the space back a moment after the delete.
	var freed api.MetricsResponse
	if !testutil.Poll(30*time.Second, func() bool {
		freed, err = d.c.Metrics(ctx, id)
		return err == nil && freed.DiskBytes < before.DiskBytes+1_000_000
	}) {
		t.Errorf("disk_bytes %d after the delete, %d before (%v)", freed.DiskBytes, before.DiskBytes, err)
	}
}

// TestLogs: the combined logs of a sandbox's background processes, over
// SSE with follow (a process started later joins) and through the CLI.
func TestLogs(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	web, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web", Argv: []string{"sh", "-c", "echo serving; sleep infinity"}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", d.url+"/v1/sandboxes/"+id+"/logs?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("logs stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	if ev := nextEvent(t, events); ev.typ != api.EventStreamOpen {
		t.Fatalf("the stream began with %s", ev.typ)
	}
	nextLine := func() api.LogLine {
		t.Helper()
		ev := nextEvent(t, events)
		var l api.LogLine
		if ev.typ != api.EventLog || json.Unmarshal(ev.data, &l) != nil {
			t.Fatalf("event %s %s, want a log line", ev.typ, ev.data)
		}
		return l
	}
	if l := nextLine(); l.Pid != web.Pid || l.Tag != "web" || l.Data != "serving\n" {
		t.Fatalf("first line %+v", l)
	}
	job, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "job", Argv: []string{"sh", "-c", "echo step 1 >&2; sleep infinity"}})
	if err != nil {
		t.Fatal(err)
	}
	if l := nextLine(); l.Pid != job.Pid || l.Tag != "job" || l.Stream != "stderr" || l.Data != "step 1\n" {
		t.Fatalf("the later process's line %+v", l)
	}
	out, errOut, code := d.cli("", "logs", id)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("web %d | serving\n", web.Pid)) || !strings.Contains(out, fmt.Sprintf("job %d ! | step 1\n", job.Pid)) {
		t.Errorf("hutch logs: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := nextEvent(t, events); ev.typ == "error" {
			if !strings.Contains(string(ev.data), "S004") {
				t.Errorf("the stream ended with %s", ev.data)
			}
			break
		}
	}
}

// TestWebhooksAddedAtRunTime: an operator adds a webhook through the CLI;
// it is listed beside the configured one, kept across a restart, sent
// what it asked for, and deleted.
func TestWebhooksAddedAtRunTime(t *testing.T) {
	const secret = "another-secret-0123456789"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(webhooks.SignatureHeader) != webhooks.Sign(secret, body) {
			t.Errorf("a delivery with a bad signature: %s", body)
		}
		mu.Lock()
		got = append(got, r.Header.Get(webhooks.EventHeader))
		mu.Unlock()
	}))
	defer srv.Close()
	d := startDaemon(t, baseConfig("webhooks:\n  - url: http://127.0.0.1:9/none\n    events: [\"nothing.*\"]\n    secret: 0123456789abcdef\n"))
	out, errOut, code := d.cli("", "webhook", "add", srv.URL+"/hook", "--events", "sandbox.created,sandbox.stopped", "--secret", secret)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 36 {
		t.Fatalf("hutch webhook add: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := d.cli("", "webhook", "add", "ftp://x", "--events", "*", "--secret", secret); code == 0 || !strings.Contains(errOut, "S001") {
		t.Errorf("a bad URL was taken: %d %q", code, errOut)
	}
	d.terminate()
	d.start()
	list, err := d.c.ListWebhooks(context.Background())
	if err != nil || len(list.Webhooks) != 2 || !list.Webhooks[0].Configured || list.Webhooks[1].WebhookID != id || list.Webhooks[1].Configured {
		t.Fatalf("webhooks after a restart: %+v %v", list, err)
	}
	if status, body := d.raw("DELETE", "/v1/webhooks/"+list.Webhooks[0].WebhookID, "", ""); status != 400 || !strings.Contains(body, "config file") {
		t.Errorf("deleting a configured webhook: %d %s", status, body)
	}
	sb := d.create(api.CreateRequest{Image: "python"})
	if _, err := d.c.Stop(context.Background(), sb, true); err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 }) {
		mu.Lock()
		t.Fatalf("the added webhook got %v", got)
	}
	if out, _, code := d.cli("", "webhook", "rm", id); code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("hutch webhook rm: %d %q", code, out)
	}
	if list, _ := d.c.ListWebhooks(context.Background()); len(list.Webhooks) != 1 {
		t.Errorf("webhooks after rm: %+v", list)
	}
}
