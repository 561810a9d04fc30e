package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

func TestSoakCounterClassifies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := newSoakCounter(ctx)
	c.done("exec", nil, false)
	c.done("failing call", errors.New("refused"), true)
	c.done("hostile call", nil, true)
	c.done("exec", fmt.Errorf("calling: %w", &api.ErrorEnvelope{Code: "S104", Message: "no such sandbox"}), false)
	c.do(ctx, "pty", false, func(ctx context.Context) error { return context.DeadlineExceeded })
	c.done("stop", errors.New("connection reset"), false)
	w := c.take()
	if w.Ops != 6 || w.Expected != 1 || w.OpsByKind["exec"] != 2 {
		t.Errorf("ops %d, expected %d, by kind %v", w.Ops, w.Expected, w.OpsByKind)
	}
	want := map[string]int64{"unexpected success hostile call": 1, "S104 exec": 1, "timeout pty": 1, "transport stop": 1}
	if fmt.Sprint(w.Errors) != fmt.Sprint(want) {
		t.Errorf("errors %v, want %v", w.Errors, want)
	}
	if w.ErrorSamples["transport stop"] != "connection reset" {
		t.Errorf("samples %v", w.ErrorSamples)
	}
	if w2 := c.take(); w2.Ops != 0 || len(w2.Errors) != 0 {
		t.Errorf("a new window starts empty: %+v", w2)
	}
	cancel()
	c.done("exec", errors.New("cut off by the end"), false)
	if w3 := c.take(); w3.Ops != 0 {
		t.Errorf("an operation ended after the soak counted: %+v", w3)
	}
}

func TestSoakSlopes(t *testing.T) {
	var ws []SoakWindow
	for i := range 5 {
		// The first window (warm-up) is left out of the fit.
		rss := int64(1000 + 10*i)
		if i == 0 {
			rss = 10
		}
		ws = append(ws, SoakWindow{RSSKiB: rss, Goroutines: 50, HeapLiveKiB: 2000 - int64(i)})
	}
	s := slopes(ws, 15*time.Minute)
	if s["rss_kib"] != 40 || s["goroutines"] != 0 || s["heap_live_kib"] != -4 {
		t.Errorf("slopes %v, want rss_kib 40/h, goroutines 0 and heap_live_kib -4/h", s)
	}
	if slopes(ws[:2], time.Minute) != nil {
		t.Error("slopes of two windows")
	}
}

func TestDaemonGauges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE go_goroutines gauge\ngo_goroutines 87\n# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 1.572864e+07\n")
	}))
	defer srv.Close()
	if g, h := daemonGauges(context.Background(), client.New(srv.URL, "")); g != 87 || h != 15360 {
		t.Errorf("goroutines %d, heap live %d KiB; want 87 and 15360", g, h)
	}
	srv.Close()
	if g, h := daemonGauges(context.Background(), client.New(srv.URL, "")); g != -1 || h != -1 {
		t.Errorf("unread gauges: %d, %d; want -1, -1", g, h)
	}
}
