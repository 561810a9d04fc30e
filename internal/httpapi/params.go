package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// paramFunc takes one payload field from the request URL. ok is false when
// the URL does not carry it.
type paramFunc func(r *http.Request) (key string, value any, ok bool, err error)

// pathParam puts the path wildcard name into the payload field key.
func pathParam(name, key string) paramFunc {
	return func(r *http.Request) (string, any, bool, error) {
		return key, r.PathValue(name), true, nil
	}
}

// queryBool puts the boolean query parameter name, when present, into the
// payload field key. A bare "?name" means true.
func queryBool(name, key string) paramFunc {
	return func(r *http.Request) (string, any, bool, error) {
		if r.URL.RawQuery == "" {
			return key, nil, false, nil
		}
		vals, ok := r.URL.Query()[name]
		if !ok {
			return key, nil, false, nil
		}
		v := vals[len(vals)-1]
		if v == "" {
			return key, true, true, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return key, nil, false, errdefs.Malformed("query parameter %s must be true or false, not %q", name, v)
		}
		return key, b, true, nil
	}
}

// withParams merges the URL's fields into the JSON object body. A field the
// body already holds with another value is S001; the same value is fine.
func withParams(r *http.Request, body []byte, params []paramFunc) (json.RawMessage, error) {
	if len(params) == 0 {
		return body, nil
	}
	fields := make(map[string]any, len(params))
	for _, p := range params {
		key, v, ok, err := p(r)
		if err != nil {
			return nil, err
		}
		if ok {
			fields[key] = v
		}
	}
	if len(fields) == 0 {
		return body, nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.Marshal(fields)
	}
	var obj map[string]json.RawMessage
	if err := functions.Decode(body, &obj); err != nil {
		return nil, err
	}
	for key, v := range fields {
		if raw, ok := obj[key]; ok {
			var got any
			if err := json.Unmarshal(raw, &got); err != nil || got != v {
				return nil, conflict(key, raw, v)
			}
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[key] = enc
	}
	return json.Marshal(obj)
}

// conflict is the S001 for a payload field that disagrees with the URL.
func conflict(key string, inBody, inURL any) error {
	b, _ := json.Marshal(inBody)
	u, _ := json.Marshal(inURL)
	return errdefs.Malformed("%s in the body (%s) does not match the URL (%s)", key, b, u)
}
