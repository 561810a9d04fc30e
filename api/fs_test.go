package api

import (
	"encoding/json"
	"testing"
)

func TestFileModeJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want FileMode
		ok   bool
	}{
		{`{"mode":"0644"}`, "0644", true},
		{`{"mode":644}`, "644", true},
		{`{"mode":"0o755"}`, "0o755", true},
		{`{}`, "", true},
		{`{"mode":null}`, "", true},
		{`{"mode":true}`, "", false},
		{`{"mode":[1]}`, "", false},
	} {
		var req FsChmodRequest
		err := json.Unmarshal([]byte(tc.in), &req)
		if (err == nil) != tc.ok || req.Mode != tc.want {
			t.Errorf("%s: mode %q, err %v; want %q ok=%v", tc.in, req.Mode, err, tc.want, tc.ok)
		}
	}
}
