package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

func TestMetrics(t *testing.T) {
	srv := functionstest.NewServer(t, &functionstest.Fake{}, httpapi.Options{})
	c := client.New(srv.URL, "")
	got, err := c.Metrics(context.Background(), functionstest.DefaultID)
	if err != nil || !reflect.DeepEqual(got, functionstest.FakeMetrics) {
		t.Fatalf("Metrics = %+v, %v; want %+v", got, err, functionstest.FakeMetrics)
	}
	var env *api.ErrorEnvelope
	if _, err := c.Metrics(context.Background(), "00000000-0000-4000-8000-000000000000"); !errors.As(err, &env) || env.Code != "S002" {
		t.Fatalf("unknown id: %v, want S002", err)
	}
	if _, err := c.Metrics(context.Background(), ""); err == nil {
		t.Fatal("empty id: no error")
	}
}
