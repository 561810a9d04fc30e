package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// watchRoute is sandbox::fs::watch with ?path= and ?recursive= from the
// query, for New's table.
func (s *server) watchRoute() route {
	return route{"GET", "/v1/sandboxes/{id}/fs/watch", s.watch, false, routeDoc{fn: api.FnFsWatch, stream: true, query: []queryParam{
		q("path", "string", "the directory to follow (absolute)"), q("recursive", "boolean", "follow the directories below it too"),
		q("user", "string", "run as this user of the image (name or uid[:gid])")}}}
}

func (s *server) watch(r *http.Request, _ []byte) (any, error) {
	recursive, _, err := queryBool(r, "recursive")
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	body, _ := json.Marshal(api.FsWatchRequest{SandboxID: r.PathValue("id"), Path: q.Get("path"), Recursive: recursive, User: q.Get("user")})
	return s.dispatch(r, api.FnFsWatch, body, functions.Params{})
}
