// Package deploy holds what an operator deploys beside hutch: the Grafana
// dashboard and the Prometheus alerting rules; its tests check them with
// Prometheus's own promtool.
package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestPrometheusRules: promtool accepts the rules, and their unit tests
// (each alert fires on what should raise it, not on a healthy daemon) pass.
func TestPrometheusRules(t *testing.T) {
	promtool := testutil.RequiresBinary(t, "promtool")
	for _, args := range [][]string{{"check", "rules", "hutch-rules.yml"}, {"test", "rules", "hutch-rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// dashboard is what the test reads of the dashboard's JSON.
type dashboard struct {
	Title, UID    string
	SchemaVersion int `json:"schemaVersion"`
	Panels        []struct {
		ID      int
		Title   string
		Type    string
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			Expr  string
			RefID string `json:"refId"`
		}
	}
}

// TestGrafanaDashboard: the dashboard's panels are well formed, each of
// their queries is PromQL that promtool parses (as recording rules), and
// every hutch metric they and the alerting rules name is one hutch exports.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("grafana/hutch-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		t.Fatalf("dashboard title %q uid %q schemaVersion %d panels %d", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.Title == "" || p.Type == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: duplicate id, or no title, type or queries", p.ID, p.Title)
		}
		ids[p.ID] = true
		if p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H < 1 {
			t.Errorf("panel %q: gridPos %+v is off Grafana's 24 columns", p.Title, p.GridPos)
		}
		for _, tg := range p.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$instance", ".*")
			raw, _ := json.Marshal(expr)
			rules.WriteString("      - record: dashboard:panel" + tg.RefID + "\n        expr: " + string(raw) + "\n")
		}
	}
	promtool := testutil.RequiresBinary(t, "promtool")
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's queries do not parse: %v\n%s", err, out)
	}
	exported := exportedMetrics(t)
	alerts, err := os.ReadFile("prometheus/hutch-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metricName.FindAllString(string(raw)+string(alerts), -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
		if !slices.Contains(exported, base) {
			t.Errorf("%s is not a metric hutch exports (%v)", m, exported)
		}
	}
}

var metricName = regexp.MustCompile(`hutch_[a-z_]+`)

// exportedMetrics are the metric names hutch's code registers: the
// Name of their options or the first argument of their descriptions.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	decl := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(hutch_[a-z_]+)"`)
	var out []string
	for _, dir := range []string{"internal/metrics", "internal/daemon"} {
		files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}
