package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// The code interpreter (issue 19) on real sandboxes.

// runCell runs a cell and returns its stdout and result.
func runCell(t *testing.T, d *daemon, req api.RunCodeRequest) (string, api.CellResult) {
	t.Helper()
	var out strings.Builder
	res, err := d.c.RunCode(context.Background(), req, func(event string, data json.RawMessage) error {
		var c api.OutputChunk
		if event == api.EventStdout && json.Unmarshal(data, &c) == nil {
			out.WriteString(c.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cell %q: %v", req.Code, err)
	}
	return out.String(), res
}

func TestInterpreterPythonAndBash(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	runCell(t, d, api.RunCodeRequest{SandboxID: id, Code: "x = 41\nimport json"})
	if out, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Code: "print(json.dumps([1]))\nx + 1"}); out != "[1]\n" || res.Data["text/plain"] != "42" {
		t.Fatalf("x + 1: %q %+v", out, res)
	}
	_, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Code: "def f():\n    return {}['k']\nf()"})
	if res.Status != "error" || res.Error.Name != "KeyError" || !strings.Contains(strings.Join(res.Error.Traceback, ""), "line 2, in f") {
		t.Fatalf("an exception: %+v", res.Error)
	}
	// An endless loop is interrupted at its timeout; x is still there.
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Code: "while True: pass", TimeoutMs: 1000}); !res.TimedOut || res.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("an endless loop: %+v", res)
	}
	// Through the CLI, and over SSE.
	if out, errOut, code := d.cli("", "run-code", id, "x * 2"); code != 0 || out != "82\n" {
		t.Fatalf("hutch run-code: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := d.cli("", "run-code", id, "1/0"); code != 1 || !strings.Contains(errOut, "ZeroDivisionError") {
		t.Errorf("hutch run-code of an error: %d %q", code, errOut)
	}
	req, _ := http.NewRequest("POST", d.url+"/v1/sandboxes/"+id+"/run-code", strings.NewReader(`{"code":"print('streamed')\nx"}`))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	if ev := nextEvent(t, events); ev.typ != api.EventStdout || !strings.Contains(string(ev.data), "streamed") {
		t.Fatalf("first event %s %s", ev.typ, ev.data)
	}
	for ev := nextEvent(t, events); ; ev = nextEvent(t, events) {
		if ev.typ == "result" {
			if !strings.Contains(string(ev.data), `"text/plain":"41"`) {
				t.Errorf("result %s", ev.data)
			}
			break
		}
	}
	// Bash keeps cd and an exported variable.
	runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "bash", Code: "cd /tmp && export GREETING=hi"})
	if out, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "bash", Code: "echo $PWD $GREETING; sh -c 'echo $GREETING'"}); out != "/tmp hi\nhi\n" || *res.ExitCode != 0 {
		t.Fatalf("bash: %q %+v", out, res)
	}
	list, err := d.c.ListContexts(context.Background(), id)
	if err != nil || len(list.Contexts) != 2 {
		t.Fatalf("contexts %+v %v", list, err)
	}
	// A language the image lacks is S242, whose hint names the images
	// (of the allowlist, python and node) that have node.
	if status, body := d.raw("POST", "/v1/sandboxes/"+id+"/run-code", "", `{"language":"javascript","code":"1"}`); status != 422 || !strings.Contains(body, "S242") ||
		!strings.Contains(body, "use an image with node (node), or install it") {
		t.Errorf("javascript in the python image: %d %s", status, body)
	}
}

func TestInterpreterJavaScript(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "node"})
	runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "javascript", Code: "const n = await new Promise((r) => setTimeout(() => r(41), 10))"})
	if out, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "javascript", Code: "console.log(require('os').platform()); n + 1"}); out != "linux\n" || res.Data["text/plain"] != "42" {
		t.Fatalf("n + 1: %q %+v", out, res)
	}
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "javascript", Code: "undefinedName"}); res.Error == nil || res.Error.Name != "ReferenceError" {
		t.Fatalf("an error: %+v", res)
	}
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "javascript", Code: "while (true) {}", TimeoutMs: 1000}); !res.TimedOut || res.Status != "error" {
		t.Fatalf("an endless loop: %+v", res)
	}
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: "javascript", Code: "n"}); res.Data["text/plain"] != "41" {
		t.Fatalf("n after an interrupt: %+v", res)
	}
}

func TestInterpreterPlots(t *testing.T) {
	d := startDaemon(t, baseConfig("image_allowlist: [python, node, python-data]\n"))
	id := d.create(api.CreateRequest{Image: "python-data"})
	_, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Code: "import matplotlib.pyplot as plt\nimport pandas as pd\n" +
		"plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3], [2, 4, 1])\npd.DataFrame({'a': [1, 2]})"})
	if res.Status != "ok" || len(res.Display) != 1 {
		t.Fatalf("a plot: %+v", res)
	}
	if html, _ := res.Data["text/html"].(string); !strings.Contains(html, "<table") {
		t.Errorf("a DataFrame's HTML: %+v", res.Data)
	}
	raw, _ := res.Display[0]["image/png"].(string)
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != 400 || r.Dy() != 300 {
		t.Errorf("the figure is %v, want 400×300", r)
	}
}

// packageServer serves, on the host's loopback, a PEP 503 index with one
// wheel (hutchdemo 1.0: VALUE = 42) under /simple/ and an npm registry
// with one package (hutch-demo 1.0.0: module.exports.value = 42) under
// /npm/.
func packageServer(t *testing.T) *httptest.Server {
	t.Helper()
	var whl bytes.Buffer
	zw := zip.NewWriter(&whl)
	for name, body := range map[string]string{
		"hutchdemo/__init__.py":            "VALUE = 42\n",
		"hutchdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hutchdemo\nVersion: 1.0\n",
		"hutchdemo-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: hutch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"hutchdemo-1.0.dist-info/RECORD":   "hutchdemo/__init__.py,,\nhutchdemo-1.0.dist-info/METADATA,,\nhutchdemo-1.0.dist-info/WHEEL,,\nhutchdemo-1.0.dist-info/RECORD,,\n",
	} {
		w, _ := zw.Create(name)
		io.WriteString(w, body)
	}
	zw.Close()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"hutch-demo","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports.value = 42\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		io.WriteString(tw, body)
	}
	tw.Close()
	gz.Close()
	whlSum := sha256.Sum256(whl.Bytes())
	tgzSHA1 := sha1.Sum(tgz.Bytes())
	tgzSHA512 := sha512.Sum512(tgz.Bytes())
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/hutchdemo/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><body><a href="/files/hutchdemo-1.0-py3-none-any.whl#sha256=%x">hutchdemo-1.0-py3-none-any.whl</a></body></html>`, whlSum)
	})
	mux.HandleFunc("/files/hutchdemo-1.0-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(whl.Bytes()) })
	mux.HandleFunc("/npm/hutch-demo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"name": "hutch-demo", "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{"name": "hutch-demo", "version": "1.0.0", "dist": map[string]string{
				"tarball": "http://" + r.Host + "/npm/hutch-demo/-/hutch-demo-1.0.0.tgz", "shasum": fmt.Sprintf("%x", tgzSHA1),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(tgzSHA512[:])}}}})
	})
	mux.HandleFunc("/npm/hutch-demo/-/hutch-demo-1.0.0.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(tgz.Bytes()) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestInterpreterInstallsPackages(t *testing.T) {
	srv := packageServer(t)
	d := startDaemon(t, baseConfig(fmt.Sprintf("image_allowlist: [python, node, python-data]\npackage_indexes: {pip: %s/simple/, npm: %s/npm/}\n", srv.URL, srv.URL)))
	ctx := context.Background()
	py := d.create(api.CreateRequest{Image: "python-data", Network: true})
	var progress strings.Builder
	res, err := d.c.Install(ctx, api.InstallRequest{SandboxID: py, Manager: "pip", Packages: []string{"hutchdemo==1.0"}}, func(_ string, data json.RawMessage) error {
		var c api.OutputChunk
		json.Unmarshal(data, &c)
		progress.WriteString(c.Data)
		return nil
	})
	if err != nil || !res.Success {
		t.Fatalf("pip install: %+v %v\n%s", res, err, progress.String())
	}
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: py, Code: "import hutchdemo\nhutchdemo.VALUE"}); res.Data["text/plain"] != "42" {
		t.Fatalf("the installed module: %+v", res)
	}
	// A package the index does not have fails, naming it.
	out, errOut, code := d.cli("", "install", py, "pip", "nosuchpkg")
	if code == 0 || !strings.Contains(out+errOut, "nosuchpkg") {
		t.Errorf("installing a missing package: %d %q %q", code, out, errOut)
	}
	js := d.create(api.CreateRequest{Image: "node", Network: true})
	if out, errOut, code := d.cli("", "install", js, "npm", "hutch-demo@1.0.0"); code != 0 {
		t.Fatalf("npm install: %d %q %q", code, out, errOut)
	}
	if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: js, Language: "javascript", Code: "require('hutch-demo').value"}); res.Data["text/plain"] != "42" {
		t.Fatalf("the installed npm package: %+v", res)
	}
	// Without a network, and with a name that could be an option: clear
	// refusals, nothing run.
	offline := d.create(api.CreateRequest{Image: "python-data"})
	if status, body := d.raw("POST", "/v1/sandboxes/"+offline+"/packages", "", `{"manager":"pip","packages":["hutchdemo"]}`); status != 400 || !strings.Contains(body, "no network") {
		t.Errorf("install without a network: %d %s", status, body)
	}
	if status, body := d.raw("POST", "/v1/sandboxes/"+py+"/packages", "", `{"manager":"pip","packages":["--index-url=http://evil/"]}`); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("an option as a package: %d %s", status, body)
	}
}

// TestInterpreterKernelCommands: a context's kernel runs from a file, so
// that process lists (sandbox::process::list, hutch ps, the console) show
// it as a short command naming the kernel, not as its whole source.
func TestInterpreterKernelCommands(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	for lang, code := range map[string]string{"python": "import sys\nsys.path[0]", "bash": "true"} {
		if _, res := runCell(t, d, api.RunCodeRequest{SandboxID: id, Language: lang, Code: code}); res.Status != "ok" {
			t.Fatalf("%s: %+v", lang, res)
		}
	}
	list, err := d.c.ListProcesses(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	kernels := 0
	for _, p := range list.Processes {
		if !strings.HasPrefix(p.Tag, "interpreter:") {
			continue
		}
		kernels++
		if len(p.Command) > 80 || !strings.Contains(p.Command, "/tmp/hutch-kernel.") {
			t.Errorf("kernel %d is listed as a %d-byte command %q, want a short one naming its file", p.Pid, len(p.Command), safeClip(p.Command))
		}
	}
	if kernels != 2 {
		t.Fatalf("%d kernels in %+v, want 2", kernels, list.Processes)
	}
	out, errOut, code := d.cli("", "ps", id)
	if code != 0 {
		t.Fatalf("hutch ps: %d %q", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(line) > 200 {
			t.Errorf("hutch ps has a %d-byte line: %q", len(line), safeClip(line))
		}
	}
	for _, want := range []string{"python3 -u /tmp/hutch-kernel.py", "bash --noprofile --norc /tmp/hutch-kernel.sh"} {
		if !strings.Contains(out, want) {
			t.Errorf("hutch ps does not show %q:\n%s", want, safeClip(out))
		}
	}
}

// safeClip is s cut to a length a test message can show.
func safeClip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
