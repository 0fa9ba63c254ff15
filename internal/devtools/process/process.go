// Package process runs one of the operator's binaries (or a peer's) as a
// child process the way the end-to-end tests and the benchmarks need it:
// output appended to a log file, plain-HTTP metrics on a loopback port it
// waits for, a graceful stop, and its Prometheus metrics read and summed.
package process

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Process is a started command with a metrics endpoint.
type Process struct {
	// Name names the process in errors.
	Name string
	Cmd  *exec.Cmd
	// MetricsAddr is host:port of the plain-HTTP /metrics endpoint.
	MetricsAddr string
	// LogPath holds the process's stdout and stderr.
	LogPath string
	log     *os.File
}

// Start starts cmd with stdout and stderr appended to logPath and waits up
// to ready for http://metricsAddr/metrics to answer.
func Start(name string, cmd *exec.Cmd, metricsAddr, logPath string, ready time.Duration) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, MetricsAddr: metricsAddr, LogPath: logPath, log: logf}
	deadline := time.Now().Add(ready)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.metricsURL()); err == nil {
			resp.Body.Close()
			return p, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = p.Stop(5 * time.Second)
	return nil, fmt.Errorf("%s did not serve metrics on %s within %s (log: %s)", name, metricsAddr, ready, logPath)
}

func (p *Process) metricsURL() string { return "http://" + p.MetricsAddr + "/metrics" }

// Pid is the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Stop sends SIGTERM and waits for the exit; after grace it kills the
// process and says so.
func (p *Process) Stop(grace time.Duration) error {
	if p.Cmd.Process == nil {
		return nil
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Cmd.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-done
		err = fmt.Errorf("%s did not stop within %s of SIGTERM", p.Name, grace)
	}
	p.log.Close()
	return err
}

// MetricsText returns the text of the metrics endpoint.
func (p *Process) MetricsText() (string, error) {
	resp, err := http.Get(p.metricsURL())
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: GET /metrics: %s", p.Name, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Metrics reads and parses the metrics endpoint.
func (p *Process) Metrics() (map[string]*dto.MetricFamily, error) {
	text, err := p.MetricsText()
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// Metric sums the samples of the counter, gauge, or histogram bucket
// series name (a histogram's "_bucket", "_sum" and "_count" series are
// addressed by those names) whose labels include every key=value (or
// key="value") of labels.
func (p *Process) Metric(name string, labels ...string) (float64, error) {
	families, err := p.Metrics()
	if err != nil {
		return 0, err
	}
	return Sum(families, name, labels...)
}

// Sum is Metric over parsed families.
func Sum(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, error) {
	want := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return 0, fmt.Errorf("label filter %q is not key=value", l)
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq // key="value", as the exposition writes it
		}
		want[k] = v
	}
	family, series := name, ""
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[name] == nil && families[base] != nil {
			family, series = base, suffix
		}
	}
	mf := families[family]
	if mf == nil {
		return 0, nil
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if series == "_bucket" {
			for _, b := range m.GetHistogram().GetBucket() {
				got["le"] = model.FloatString(b.GetUpperBound()).String()
				if matches(got, want) {
					sum += float64(b.GetCumulativeCount())
				}
			}
			continue
		}
		if !matches(got, want) {
			continue
		}
		switch {
		case series == "_sum":
			sum += m.GetHistogram().GetSampleSum()
		case series == "_count":
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, nil
}

func matches(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// FreeAddr returns a 127.0.0.1:port free at the time of the call, chosen
// as FreePorts chooses.
func FreeAddr() (string, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1, below the
// kernel's ephemeral range. A port in that range can be taken as the
// source port of any outgoing connection between the moment it is chosen
// and the moment its process binds it (the node's processes start over
// many seconds and open hundreds of connections on loopback meanwhile), and
// the process then fails with "address already in use".
func FreePorts(n int) ([]int, error) {
	lo, hi := portRange()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no %d free ports in %d-%d on 127.0.0.1", n, lo, hi)
		}
		addr := "127.0.0.1:0"
		if hi > lo {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portRange is where FreePorts picks: from 10000 to the first ephemeral
// port, or nothing (hi <= lo: let the kernel choose) when the ephemeral
// range is unknown or leaves too little room below it.
func portRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first < 11000 {
		return 0, 0
	}
	return 10000, first
}

// Kill kills the process with SIGKILL, as the OOM killer or a node loss
// would: no shutdown code runs.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	_ = p.Cmd.Wait()
	p.log.Close()
}
