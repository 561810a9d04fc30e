package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// paramFunc takes request fields from the URL into p, which the table sets
// on the decoded request (functions.Params): the payload is never rewritten.
type paramFunc func(r *http.Request, p *functions.Params) error

// sandboxParam is {id} as sandbox_id.
func sandboxParam(r *http.Request, p *functions.Params) error {
	p.SandboxID = r.PathValue("id")
	return nil
}

// nameParam is {name} as name.
func nameParam(r *http.Request, p *functions.Params) error {
	p.Name = r.PathValue("name")
	return nil
}

// waitParam is ?wait, when present, as wait.
func waitParam(r *http.Request, p *functions.Params) error {
	v, ok, err := queryBool(r, "wait")
	if ok {
		p.Wait = &v
	}
	return err
}

// queryBool is the boolean query parameter name; ok is false when the URL
// does not carry it. A bare "?name" means true.
func queryBool(r *http.Request, name string) (v, ok bool, err error) {
	if r.URL.RawQuery == "" {
		return false, false, nil
	}
	vals, ok := r.URL.Query()[name]
	if !ok {
		return false, false, nil
	}
	s := vals[len(vals)-1]
	if s == "" {
		return true, true, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, false, errdefs.Malformed("query parameter %s must be true or false, not %q", name, s)
	}
	return b, true, nil
}

// queryCount reads query parameter name of q as a whole number: 0 when it
// is absent, S001 when it is not a number of at least 0.
func queryCount(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errdefs.Malformed("query parameter %s must be a whole number, not %q", name, v)
	}
	return n, nil
}
