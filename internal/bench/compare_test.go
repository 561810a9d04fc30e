package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/client"
)

func TestCompareWithDocker(t *testing.T) {
	lat := func(p50ms float64) *Stats {
		s := Summarize(msList(p50ms))
		return &s
	}
	mem := func(mib uint64) *Sizes {
		s := SummarizeSizes([]uint64{mib << 20})
		return &s
	}
	docker := func(r Result) Result { r.Name = baselineDocker; return r }
	rep := Report{Results: []Result{
		{Name: NameCreateExec, Latency: lat(100), Baselines: []Result{
			docker(Result{Latency: lat(300)}), {Name: baselineRunscDo, Latency: lat(50)},
		}},
		{Name: NamePoolCreateExec, Latency: lat(10)}, // compared with create-exec's Docker
		{Name: NameExecTrue, Latency: lat(10), Baselines: []Result{docker(Result{Skipped: "no docker"})}},
		{Name: NameExecTrueWS, Latency: lat(8)}, // its reference has no Docker result
		{Name: NameExecThroughput, Throughput: &Throughput{PerSec: 200}, Baselines: []Result{docker(Result{Throughput: &Throughput{PerSec: 50}})}},
		{Name: NameIdleMemory, Memory: mem(30), Baselines: []Result{docker(Result{Memory: mem(6)})}},
		{Name: NameFsSmall, Err: "boom", Baselines: []Result{docker(Result{Latency: lat(5)})}},
	}}
	scenarios := []Scenario{
		{Name: NameCreateExec}, {Name: NamePoolCreateExec, dockerOf: NameCreateExec},
		{Name: NameExecTrue}, {Name: NameExecTrueWS, dockerOf: NameExecTrue},
		{Name: NameExecThroughput}, {Name: NameIdleMemory}, {Name: NameFsSmall},
	}
	rep.compareWithDocker(scenarios)
	want := map[string]float64{NameCreateExec: 3, NamePoolCreateExec: 30, NameExecThroughput: 4, NameIdleMemory: 0.2}
	for _, res := range rep.Results {
		w, ok := want[res.Name]
		switch {
		case !ok && res.VsDocker != nil:
			t.Errorf("%s compared with Docker: %v", res.Name, *res.VsDocker)
		case ok && (res.VsDocker == nil || *res.VsDocker != w):
			t.Errorf("%s vs Docker = %v, want %v", res.Name, res.VsDocker, w)
		}
	}
}

func TestSummarizeSizes(t *testing.T) {
	got := SummarizeSizes([]uint64{30, 10, 20, 40})
	want := Sizes{Samples: []uint64{30, 10, 20, 40}, Min: 10, Max: 40, Mean: 25, P50: 25, P90: 37, P99: 40}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SummarizeSizes = %+v, want %+v", got, want)
	}
	if z := SummarizeSizes(nil); z.P50 != 0 || z.Max != 0 || len(z.Samples) != 0 {
		t.Errorf("SummarizeSizes(nil) = %+v", z)
	}
}

func TestPattern(t *testing.T) {
	block := randomBytes(1000)
	for _, size := range []int64{0, 1, 999, 1000, 2500} {
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, newPattern(block, size)); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != size || !bytes.Equal(buf.Bytes(), bytes.Repeat(block, 3)[:size]) {
			t.Errorf("pattern of %d bytes is wrong", size)
		}
		if err := checkStream(bytes.NewReader(buf.Bytes()), size, patternCRC(block, size)); err != nil {
			t.Errorf("checkStream of the pattern: %v", err)
		}
	}
	err := checkStream(strings.NewReader("x"), 2, patternCRC(block, 2))
	if err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("checkStream of a short stream = %v", err)
	}
	if !bytes.Equal(randomBytes(16), randomBytes(16)) {
		t.Error("randomBytes is not reproducible")
	}
}

func TestTreePSS(t *testing.T) {
	self, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skip("no /proc")
	}
	key := string(bytes.SplitN(self, []byte{0}, 2)[0]) // this test binary's path
	pss, procs, err := treePSS([]string{key, "no process has this in its command line 7f3c"})
	if err != nil {
		t.Fatal(err)
	}
	if procs[key] < 1 || pss[key] < 1<<20 {
		t.Errorf("this process: %d processes, PSS %d bytes", procs[key], pss[key])
	}
	if n := procs["no process has this in its command line 7f3c"]; n != 0 {
		t.Errorf("%d processes match a key nobody has", n)
	}
	avail, err := memAvailable()
	if err != nil || avail == 0 {
		t.Errorf("memAvailable = %d, %v", avail, err)
	}
}

func TestCheckLocal(t *testing.T) {
	for url, local := range map[string]bool{
		"http://127.0.0.1:3111": true, "http://localhost:1": true, "http://[::1]:3111": true,
		"http://10.1.2.3:3111": false, "https://hutch.example.com": false,
	} {
		e := &env{c: client.New(url, "")}
		if err := e.checkLocal(); (err == nil) != local {
			t.Errorf("checkLocal(%s) = %v, want local %v", url, err, local)
		}
	}
}

func TestSizesJSONIsMiB(t *testing.T) {
	b, err := json.Marshal(SummarizeSizes([]uint64{100 << 20, 0}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":2,"p50_mib":50,"p90_mib":90,"p99_mib":99,"min_mib":0,"mean_mib":50,"max_mib":100,"samples_mib":[100,0]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}
