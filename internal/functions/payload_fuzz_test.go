package functions_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// FuzzPayloads sends hostile JSON payloads to every function of the table
// (the fuzzer picks the function) over the fake manager, and checks: an
// error carries one of the documented S-codes, and a payload that is not
// a JSON object (nor empty or null) is an S001 that reached no manager
// method.
func FuzzPayloads(f *testing.F) {
	fns := functions.New(functionstest.DepsOf(&functionstest.Fake{})).Functions()
	for i, p := range []string{`{}`, `{"image":"python"}`, `{"sandbox_id":"x","cmd":["ls"]}`, `[1]`, `"s"`,
		`{"sandbox_id":"` + functionstest.DefaultID + `","path":"/etc/../../x","content":"aGk="}`, `{"a":1} {"b":2}`, `null`} {
		f.Add(uint16(i*7), []byte(p))
	}
	codes := errdefs.Codes()
	f.Fuzz(func(t *testing.T, pick uint16, payload []byte) {
		fake := &functionstest.Fake{}
		table := functions.New(functionstest.DepsOf(fake))
		fn := fns[int(pick)%len(fns)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := table.Call(ctx, fn.ID, payload, functions.Params{})
		if s, ok := res.(*functions.Stream); ok {
			s.Close()
		}
		if err != nil && !slices.Contains(codes, errdefs.CodeOf(err)) {
			t.Fatalf("%s: error %v has no documented S-code", fn.ID, err)
		}
		var obj map[string]json.RawMessage
		if json.Valid(payload) && json.Unmarshal(payload, &obj) != nil && string(payload) != "null" {
			if errdefs.CodeOf(err) != errdefs.CodeMalformed {
				t.Errorf("%s: payload %q that is not an object: %v, want S001", fn.ID, payload, err)
			}
			if m := fake.Methods(); len(m) > 0 {
				t.Errorf("%s: payload %q that is not an object reached the manager: %v", fn.ID, payload, m)
			}
		}
	})
}
