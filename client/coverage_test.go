package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// notCovered are the routes the Go client reaches another way, and why.
var notCovered = map[string]string{
	"GET /v1/sandboxes/{id}/events":               "ListEvents with sandbox_id (GET /v1/events?sandbox_id=)",
	"GET /v1/sandboxes/{id}/processes/{pid}/wait": "WaitProcess posts its request (POST …/wait)",
	"POST /mcp":   "MCP: use an MCP client (hutch mcp, or the SDK's streamable HTTP transport)",
	"GET /mcp":    "MCP",
	"DELETE /mcp": "MCP",
}

// TestClientCoversEveryRoute: every route of docs/openapi.json is reached
// by a method of the client (or listed in notCovered with the way).
func TestClientCoversEveryRoute(t *testing.T) {
	raw, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	type route struct {
		key string
		re  *regexp.Regexp
	}
	var routes []route
	for p, ops := range doc.Paths {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$")
		for m := range ops {
			routes = append(routes, route{strings.ToUpper(m) + " " + p, re})
		}
	}
	var mu sync.Mutex
	hit := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, rt := range routes {
			if strings.HasPrefix(rt.key, r.Method+" ") && rt.re.MatchString(r.URL.EscapedPath()) {
				// The most specific match wins: a literal path over one
				// with parameters.
				hit[rt.key] = true
			}
		}
		mu.Unlock()
		if strings.Contains(r.Header.Get("Accept"), "ndjson") {
			w.Write([]byte(`{"type":"result","result":{}}` + "\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"sandbox_ids":[],"snapshot_id":"s","sandbox_id":"x"}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "sb"
	none := func(string, json.RawMessage) error { return nil }
	calls := []func() error{
		func() error { _, err := c.Create(ctx, api.CreateRequest{Image: "python"}); return err },
		func() error {
			_, err := c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
			return err
		},
		func() error {
			_, err := c.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}}, none)
			return err
		},
		func() error { _, err := c.Stop(ctx, id, true); return err },
		func() error { _, err := c.List(ctx); return err },
		func() error { _, err := c.Get(ctx, id); return err },
		func() error { _, err := c.ImageStatus(ctx, "python"); return err },
		func() error { return c.Call(ctx, api.FnList, struct{}{}, nil) },
		func() error { return c.Health(ctx) },
		func() error { _, err := c.Functions(ctx); return err },
		func() error { _, err := c.Function(ctx, api.FnExec); return err },
		func() error { _, err := c.OpenAPI(ctx); return err },
		func() error { _, err := c.ListEvents(ctx, api.EventsRequest{}); return err },
		func() error {
			return c.StreamEvents(ctx, api.EventsRequest{}, func(api.EventRecord) error { return nil })
		},
		func() error { _, err := c.PublishEvent(ctx, api.PublishRequest{Topic: "t"}); return err },
		func() error { _, err := c.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id}); return err },
		func() error { _, err := c.ListAlerts(ctx, ""); return err },
		func() error { _, err := c.DeleteAlert(ctx, "a"); return err },
		func() error { _, err := c.CreateWebhook(ctx, api.WebhookCreateRequest{}); return err },
		func() error { _, err := c.ListWebhooks(ctx); return err },
		func() error { _, err := c.DeleteWebhook(ctx, "w"); return err },
		func() error { _, err := c.WebhookDeliveries(ctx); return err },
		func() error { _, err := c.FsLs(ctx, api.FsLsRequest{SandboxID: id, Path: "/"}); return err },
		func() error {
			_, err := c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/f"}, bytes.NewReader(nil))
			return err
		},
		func() error {
			_, body, err := c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/f"})
			if body != nil {
				body.Close()
			}
			return err
		},
		func() error {
			_, err := c.UploadArchive(ctx, api.FsUnpackRequest{SandboxID: id, Path: "/d"}, bytes.NewReader(nil))
			return err
		},
		func() error {
			body, err := c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: "/d"})
			if body != nil {
				body.Close()
			}
			return err
		},
		func() error { _, err := c.Catalog(ctx); return err },
		func() error { _, err := c.Images(ctx); return err },
		func() error { _, err := c.PullImage(ctx, "python"); return err },
		func() error { _, err := c.RemoveImage(ctx, "python"); return err },
		func() error { _, err := c.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id}); return err },
		func() error { _, err := c.ListContexts(ctx, id); return err },
		func() error { _, err := c.RestartContext(ctx, "c"); return err },
		func() error { _, err := c.DeleteContext(ctx, "c"); return err },
		func() error { _, err := c.Interrupt(ctx, "c"); return err },
		func() error { _, err := c.RunCode(ctx, api.RunCodeRequest{SandboxID: id, Code: "1"}, none); return err },
		func() error { _, err := c.Install(ctx, api.InstallRequest{SandboxID: id}, none); return err },
		func() error {
			return c.WatchFiles(ctx, api.FsWatchRequest{SandboxID: id, Path: "/"}, func(api.FsWatchEvent) error { return nil })
		},
		func() error { _, err := c.ListEnv(ctx, id); return err },
		func() error { _, err := c.GetEnv(ctx, id, "K"); return err },
		func() error { _, err := c.SetEnv(ctx, id, api.Env{"K=V"}); return err },
		func() error { _, err := c.DeleteEnv(ctx, id, "K"); return err },
		func() error { _, err := c.CreateNetwork(ctx, "n"); return err },
		func() error { _, err := c.ListNetworks(ctx); return err },
		func() error { _, err := c.DeleteNetwork(ctx, "n"); return err },
		func() error { _, err := c.CreateVolume(ctx, "v", 0); return err },
		func() error { _, err := c.ListVolumes(ctx); return err },
		func() error { _, err := c.GetVolume(ctx, "v"); return err },
		func() error { _, err := c.DeleteVolume(ctx, "v"); return err },
		func() error { _, err := c.Quota(ctx); return err }, // issue 38
		func() error { _, err := c.ConnectNetwork(ctx, "n", id); return err },
		func() error { _, err := c.DisconnectNetwork(ctx, "n", id); return err },
		func() error {
			_, err := c.UpdateNetwork(ctx, id, api.EgressPolicy{DenyOut: []string{"example.com"}})
			return err
		},
		func() error { return callGit(ctx, c, id) },
		func() error { _, err := c.SubmitJob(ctx, api.JobSubmitRequest{}); return err },
		func() error { _, err := c.GetJob(ctx, "j"); return err },
		func() error { _, err := c.ListJobs(ctx, api.JobListRequest{}); return err },
		func() error { _, err := c.CancelJob(ctx, "j"); return err },
		func() error { _, err := c.DeadLetters(ctx, api.JobListRequest{}); return err },
		func() error { _, err := c.RetryJob(ctx, "j"); return err },
		func() error { _, err := c.Metrics(ctx, id); return err },
		func() error {
			return c.MetricsStream(ctx, id, time.Second, func(api.MetricsResponse) error { return nil })
		},
		func() error { _, err := c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id}); return err },
		func() error { _, err := c.GetProcess(ctx, id, 1); return err },
		func() error { _, err := c.ListProcesses(ctx, id); return err },
		func() error {
			_, err := c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: 1})
			return err
		},
		func() error {
			_, err := c.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: 1})
			return err
		},
		func() error {
			_, err := c.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: 1})
			return err
		},
		func() error { _, err := c.KillProcess(ctx, id, 1); return err },
		func() error { _, err := c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: 1}); return err },
		func() error {
			_, err := c.ResizeProcess(ctx, api.ProcessResizeRequest{SandboxID: id, Pid: 1})
			return err
		},
		func() error { return c.Logs(ctx, api.LogsRequest{SandboxID: id}, none) },
		func() error { _, err := c.Prometheus(ctx); return err },
		func() error { _, err := c.Pause(ctx, id, ""); return err },
		func() error { _, err := c.Resume(ctx, id); return err },
		func() error { _, err := c.SetTimeout(ctx, id, 1); return err },
		func() error { _, err := c.CreateSnapshot(ctx, id, ""); return err },
		func() error { _, err := c.Fork(ctx, id, 1); return err },
		func() error { _, err := c.ListSnapshots(ctx); return err },
		func() error { _, err := c.GetSnapshot(ctx, "s"); return err },
		func() error { _, err := c.DeleteSnapshot(ctx, "s"); return err },
		func() error { _, err := c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "t"}); return err },
		func() error { _, err := c.ListTemplates(ctx); return err },
		func() error { _, err := c.GetTemplate(ctx, "t"); return err },
		func() error { _, err := c.DeleteTemplate(ctx, "t"); return err },
		func() error { _, err := c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 80}); return err },
		func() error { _, err := c.ListPorts(ctx, id); return err },
		func() error { _, err := c.UnexposePort(ctx, id, 80); return err },
		func() error {
			conn, err := c.Forward(ctx, id, 80)
			if conn != nil {
				conn.Close()
			}
			return err
		},
		func() error {
			tm, err := c.Terminal(ctx, id, client.TerminalOptions{})
			if tm != nil {
				tm.Close()
			}
			return err
		},
		// issue 39
		func() error { _, err := c.CancelTemplateBuild(ctx, "t"); return err },
		func() error {
			_, err := c.BuildTemplate(ctx, api.TemplateBuildRequest{}, func(api.TemplateBuildEvent) error { return nil })
			return err
		},
		// issue 37
		func() error { _, err := c.SetSecret(ctx, "K", "v"); return err },
		func() error { _, err := c.ListSecrets(ctx); return err },
		func() error { _, err := c.DeleteSecret(ctx, "K"); return err },
		func() error { _, err := c.EgressLog(ctx, id); return err },
	}
	for _, call := range calls {
		_ = call() // the stand-in's answers are not the daemon's; only the request counts
	}
	var missing []string
	for _, rt := range routes {
		// A port's preview routes are its server's: any HTTP client on
		// the URL ExposePort answers.
		if strings.Contains(rt.key, "/ports/{port}/{rest}") || strings.Contains(rt.key, " /p/{token}/") {
			continue
		}
		if !hit[rt.key] && notCovered[rt.key] == "" {
			missing = append(missing, rt.key)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no client method reaches %s", strings.Join(missing, ", "))
	}
}
