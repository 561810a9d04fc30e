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
	return route{"GET", "/v1/sandboxes/{id}/fs/watch", s.watch, false}
}

func (s *server) watch(r *http.Request, _ []byte) (any, error) {
	recursive, _, err := queryBool(r, "recursive")
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(api.FsWatchRequest{SandboxID: r.PathValue("id"), Path: r.URL.Query().Get("path"), Recursive: recursive})
	return s.dispatch(r, api.FnFsWatch, body, functions.Params{})
}

func init() {
	routeDocs["GET /v1/sandboxes/{id}/fs/watch"] = routeDoc{fn: api.FnFsWatch, stream: true, query: []queryParam{
		q("path", "string", "the directory to follow (absolute)"), q("recursive", "boolean", "follow the directories below it too")}}
}
