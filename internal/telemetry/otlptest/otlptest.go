// Package otlptest is an in-process OTLP/HTTP trace receiver for tests: it
// accepts what an OpenTelemetry exporter posts to /v1/traces (protobuf or
// JSON) and keeps the spans, so a test can check what a real exporter sent
// over a real connection.
package otlptest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Name    string
	TraceID string
	SpanID  string
	Parent  string
	// Attrs holds the span's attributes as text.
	Attrs map[string]string
	// Resource holds the attributes of the resource that sent it.
	Resource map[string]string
	// Error is true when the span's status is Error.
	Error bool
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base URL to put in OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu sync.Mutex
	// spans is guarded by mu.
	spans []Span
}

// New starts a receiver that stops when the test ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if req.Header.Get("Content-Type") == "application/json" {
		err = protojson.Unmarshal(body, &msg)
	} else {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(msg *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{
					Name:     s.GetName(),
					TraceID:  fmt.Sprintf("%x", s.GetTraceId()),
					SpanID:   fmt.Sprintf("%x", s.GetSpanId()),
					Parent:   fmt.Sprintf("%x", s.GetParentSpanId()),
					Attrs:    attrs(s.GetAttributes()),
					Resource: res,
					Error:    s.GetStatus().GetCode() == 2, // STATUS_CODE_ERROR
				})
			}
		}
	}
}

// attrs flattens OTLP attributes to text.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// WaitFor waits up to timeout until a span named name whose attributes
// include want has arrived, and returns it.
func (r *Receiver) WaitFor(name string, want map[string]string, timeout time.Duration) (Span, bool) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		for _, s := range r.Spans() {
			if s.Name == name && matches(s.Attrs, want) {
				return s, true
			}
		}
		if time.Now().After(deadline) {
			return Span{}, false
		}
	}
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
