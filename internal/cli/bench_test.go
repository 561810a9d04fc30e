package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

func TestBench(t *testing.T) {
	// Hermetic: no Docker baseline even where Docker runs.
	quick := []string{"bench", "--runs", "2", "--warmup", "0", "--sandboxes", "1", "--callers", "1", "--duration", "20ms", "--docker", ""}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // substrings
		wantStderr string   // substring
		wantJSON   []string // scenario names in the JSON file; nil: no file
		e2bKey     string   // $E2B_API_KEY
	}{
		{
			name:       "table and json",
			args:       []string{"--scenarios", "exec-true,create,exec-throughput"},
			wantStdout: []string{"## hutch bench", "image `python`, 2 runs after 0 warm-up runs", "| create (agent ready) | 2 |", "| exec true (HTTP) | 2 |", "| exec throughput | 1 × 1 |"},
			wantStderr: "bench: results written to ",
			wantJSON:   []string{"create", "exec-true", "exec-throughput"},
		},
		{
			name:       "other image",
			args:       []string{"--scenarios", "exec-true", "--image", "node"},
			wantStdout: []string{"image `node`"},
			wantJSON:   []string{"exec-true"},
		},
		{
			name:       "a failed scenario fails the command",
			args:       []string{"--scenarios", "spawn-floor,exec-true"},
			wantCode:   exitFailure,
			wantStdout: []string{"| exec true (HTTP) | 2 |", "Failed:\n- spawn floor (posix_spawn in sandbox): reading spawn timings"},
			wantStderr: "hutch: some scenarios failed",
			wantJSON:   []string{"exec-true", "spawn-floor"},
		},
		{
			name:       "unknown scenario",
			args:       []string{"--scenarios", "docker"},
			wantCode:   exitUsage,
			wantStderr: `--scenarios: unknown scenario "docker"; known scenarios: create-exec,`,
		},
		{
			name:       "no runs",
			args:       []string{"--runs", "0"},
			wantCode:   exitUsage,
			wantStderr: "runs must be at least 1, got 0",
		},
		{
			name:       "no stream",
			args:       []string{"--stream-mib", "0"},
			wantCode:   exitUsage,
			wantStderr: "stream size must be at least 1 byte",
		},
		{
			name:       "not an E2B key",
			args:       []string{"--e2b-key", "sk-123"},
			wantCode:   exitUsage,
			wantStderr: "the E2B key must be e2b_ and at least 32 lower-case hex digits",
		},
		{
			name:       "the E2B key from the environment",
			e2bKey:     "e2b_123",
			wantCode:   exitUsage,
			wantStderr: "the E2B key must be e2b_",
		},
		{
			name:       "a daemon without the E2B API skips its scenarios",
			args:       []string{"--scenarios", "e2b-exec-true", "--e2b-key", "e2b_0123456789abcdef0123456789abcdef"},
			wantStdout: []string{"Skipped:\n- E2B commands.run('true') (envd, Connect JSON): the daemon serves no E2B API (POST /v2/sandboxes: 404"},
			wantJSON:   []string{"e2b-exec-true"},
		},
		{
			name: "docker and runsc baselines are skipped, not failed",
			args: []string{"--scenarios", "create-exec"},
			wantStdout: []string{"| create→first exec (cold) | 2 |", "- docker: not measured: the Docker baselines are off",
				"Skipped:\n- create→first exec (cold) ↳ runsc do true (boot, run, exit): no runsc binary at "},
			wantJSON: []string{"create-exec"},
		},
		{
			name: "runtimes alone run the runtime scenarios; a daemon that lists none skips them",
			args: []string{"--runtimes", "gvisor,microvm"},
			wantStdout: []string{"Skipped:\n- create→first exec (cold), gvisor: the daemon does not list its runtimes on /healthz",
				"- host memory per idle sandbox (PSS), microvm: the daemon does not list its runtimes"},
			wantJSON: []string{"runtime-ready/gvisor", "runtime-ready/microvm", "runtime-exec-true/gvisor", "runtime-exec-true/microvm",
				"runtime-idle-memory/gvisor", "runtime-idle-memory/microvm"},
		},
		{
			name:       "a runtime scenario without runtimes runs in the default runtime",
			args:       []string{"--scenarios", "runtime-exec-true"},
			wantStdout: []string{"| exec true (HTTP) | default | 2 | "},
			wantJSON:   []string{"runtime-exec-true/default"},
		},
		{
			name:       "a runtime named twice",
			args:       []string{"--runtimes", "microvm,microvm"},
			wantCode:   exitUsage,
			wantStderr: "runtime microvm is named twice",
		},
		{
			name:     "arguments",
			args:     []string{"python"},
			wantCode: exitUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &functionstest.Fake{})
			h.env["E2B_API_KEY"] = tt.e2bKey
			out := filepath.Join(t.TempDir(), "results.json")
			args := append(append(append([]string(nil), quick...), "--json-out", out), tt.args...)
			stdout, stderr, code := h.run("", args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
			b, err := os.ReadFile(out)
			if tt.wantJSON == nil {
				if err == nil {
					t.Errorf("results written on failure:\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Results []struct {
					Name string `json:"name"`
				} `json:"results"`
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("results file: %v", err)
			}
			var names []string
			for _, r := range rep.Results {
				names = append(names, r.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantJSON, ",") {
				t.Errorf("results file names %v, want %v", names, tt.wantJSON)
			}
		})
	}
}

func TestEngineURLFor(t *testing.T) {
	for daemonURL, want := range map[string]string{
		"":                          "ws://127.0.0.1:49134",
		"http://127.0.0.1:3111":     "ws://127.0.0.1:49134",
		"http://127.0.0.1:3111/":    "ws://127.0.0.1:49134",
		"http://127.0.0.1:3211":     "",
		"https://hutch.example.com": "",
	} {
		if got := engineURLFor(daemonURL); got != want {
			t.Errorf("engineURLFor(%q) = %q, want %q", daemonURL, got, want)
		}
	}
}

func TestPrivateConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(privateConfig("/var/tmp/cache dir", "node", 120)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ImageCacheDir != "/var/tmp/cache dir" || cfg.WarmPool["node"] != privateWarmPool || cfg.WarmPoolAuto || cfg.MaxConcurrentSandboxes < 120+privateWarmPool {
		t.Errorf("private daemon config = %+v", cfg)
	}
	pool, err := config.Parse([]byte(privatePoolConfig("/var/tmp/cache dir", 120)))
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	if pool.ImageCacheDir != "/var/tmp/cache dir" || pool.WarmPool != nil || !pool.WarmPoolAuto || pool.WarmPoolMax != def.WarmPoolMax ||
		pool.WarmPoolMemoryMB != def.WarmPoolMemoryMB || pool.MaxConcurrentSandboxes < 120+privateWarmPool {
		t.Errorf("private pool daemon config = %+v", pool)
	}
}
