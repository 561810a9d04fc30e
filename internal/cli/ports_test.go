package cli

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// portsFake is the fake manager with port 8000 exposed, public, under
// the preview domain localhost.
type portsFake struct{ *functionstest.Fake }

var publicPort = api.PortInfo{SandboxID: id, Port: 8000, Public: true, URL: "/p/tok/",
	HostURL: "http://8000-" + id + ".localhost:3111/?hutch_preview_token=tok"}

func (portsFake) ExposePort(context.Context, api.PortExposeRequest) (api.PortInfo, error) {
	return publicPort, nil
}

func (portsFake) ListPorts(context.Context, api.PortListRequest) (api.PortListResponse, error) {
	return api.PortListResponse{Ports: []api.PortInfo{publicPort, {SandboxID: id, Port: 9000, URL: "/v1/sandboxes/" + id + "/ports/9000/"}}}, nil
}

func (portsFake) UnexposePort(context.Context, api.PortRequest) (api.PortInfo, error) {
	return publicPort, nil
}

var _ functions.Ports = portsFake{}

func TestPortsShowHostURLs(t *testing.T) {
	fake := &functionstest.Fake{}
	srv := httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(portsFake{fake})), httpapi.Options{}))
	defer srv.Close()
	h := &harness{t: t, fake: fake, env: map[string]string{"HUTCH_URL": srv.URL}, tty: map[string]bool{}}
	out, errOut, code := h.run("", "ports", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"PORT PUBLIC EXPIRES URL HOST URL",
		"8000 true - " + srv.URL + "/p/tok/ " + publicPort.HostURL,
		"9000 false - " + srv.URL + "/v1/sandboxes/" + id + "/ports/9000/ -"}
	for i := range lines {
		if code != 0 || len(lines) != len(want) || strings.Join(strings.Fields(lines[i]), " ") != want[i] {
			t.Fatalf("hutch ports: %d %q %q", code, out, errOut)
		}
	}
	// expose prints the path URL alone on stdout, the host URL on stderr.
	out, errOut, code = h.run("", "expose", id, "8000", "--public")
	if code != 0 || out != srv.URL+"/p/tok/\n" || !strings.Contains(errOut, publicPort.HostURL) {
		t.Fatalf("hutch expose: %d %q %q", code, out, errOut)
	}
}
