package functions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// TestFunctionsDescribeThemselves: every function has a description and
// the schemas of its request and result; ::info names one; an unknown id
// is function_not_found.
func TestFunctionsDescribeThemselves(t *testing.T) {
	tbl := New(Deps{Sandboxes: &fakeSandboxes{}})
	res, err := Invoke(context.Background(), tbl, api.FnFunctionsList, api.FunctionsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	list := res.(api.FunctionsResponse)
	if len(list.Functions) == 0 {
		t.Fatal("no functions listed")
	}
	for _, f := range list.Functions {
		if strings.HasPrefix(f.FunctionID, api.EngineFnPrefix) {
			t.Errorf("%s listed without include_internal", f.FunctionID)
		}
		var req, resp map[string]any
		if f.Description == "" || json.Unmarshal(f.RequestFormat, &req) != nil || json.Unmarshal(f.ResponseFormat, &resp) != nil || req["type"] != "object" {
			t.Errorf("%s: %q %s %s", f.FunctionID, f.Description, f.RequestFormat, f.ResponseFormat)
		}
	}
	res, err = Invoke(context.Background(), tbl, api.FnFunctionsInfo, api.FunctionsInfoRequest{FunctionID: api.FnExec})
	if err != nil {
		t.Fatal(err)
	}
	info := res.(api.FunctionsResponse).Functions[0]
	var schema struct {
		Properties map[string]struct{ Type any } `json:"properties"`
	}
	if err := json.Unmarshal(info.RequestFormat, &schema); err != nil || schema.Properties["sandbox_id"].Type != "string" || schema.Properties["timeout_ms"].Type != "integer" {
		t.Errorf("sandbox::exec's request schema: %s", info.RequestFormat)
	}
	if _, err := Invoke(context.Background(), tbl, api.FnFunctionsInfo, api.FunctionsInfoRequest{FunctionID: "sandbox::nope"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown function: %v", err)
	}
}
