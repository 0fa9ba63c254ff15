// Package benchkit holds what the benchmark commands under hack/bench
// share: process figures from /proc, metrics scraping, CRD installation,
// parallel creation and percentiles.
package benchkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ProcCPU is the user+system CPU seconds a process has used.
func ProcCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which may hold spaces, in parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// ProcPeakRSS is the peak resident set size (VmHWM) of a process in KiB.
func ProcPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strconv.ParseInt(strings.Fields(line)[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// CPUModel is the model name of the machine's first CPU.
func CPUModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
		}
	}
	return "unknown CPU"
}

// LoadAverage is the first three fields of /proc/loadavg.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Parallel runs f(0..n-1) on workers goroutines and returns the first error.
func Parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// InstallCRDs creates every CRD in dir (*.yaml) plus extra, and waits until
// all are established.
func InstallCRDs(ctx context.Context, c apiextclient.Interface, dir string, extra ...*apiextensionsv1.CustomResourceDefinition) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	crds := append([]*apiextensionsv1.CustomResourceDefinition{}, extra...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	for _, crd := range crds {
		if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		for {
			got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			established := false
			for _, cond := range got.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if established {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// durations; 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Sorted returns a sorted copy of ds.
func Sorted(ds []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), ds...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// FreeAddr returns a free 127.0.0.1:port.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Process is a command run by a benchmark, with its output in a log file
// and a plain-HTTP metrics endpoint.
type Process struct {
	Cmd         *exec.Cmd
	MetricsAddr string
	LogFile     string
}

// StartProcess starts cmd with stdout and stderr in logFile and waits up to
// a minute for http://metricsAddr/metrics to answer.
func StartProcess(cmd *exec.Cmd, metricsAddr, logFile string) (*Process, error) {
	logf, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{Cmd: cmd, MetricsAddr: metricsAddr, LogFile: logFile}
	for range 300 {
		if _, err := p.Metrics(); err == nil {
			return p, nil
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("%s did not serve metrics on %s within 60s (log: %s)", cmd.Path, metricsAddr, logFile)
}

// Pid is the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Stop sends SIGTERM, and SIGKILL after 30 s.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-done
	}
}

// Metrics returns the text of the metrics endpoint.
func (p *Process) Metrics() (string, error) {
	resp, err := http.Get("http://" + p.MetricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Metric sums the samples of the metric name whose line contains every
// filter; 0 when the endpoint does not answer.
func (p *Process) Metric(name string, filters ...string) float64 {
	text, err := p.Metrics()
	if err != nil {
		return 0
	}
	return SumMetric(text, name, filters...)
}

// SumMetric sums the samples of name in a Prometheus text exposition whose
// line contains every filter.
func SumMetric(text, name string, filters ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, f := range filters {
			if !strings.Contains(line, f) {
				continue lines
			}
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum
}

// Processes are named processes whose CPU use over a phase is compared.
type Processes struct {
	names []string
	pids  []int
	start []float64
}

// ClusterProcesses are kube-apiserver, etcd and kube-controller-manager of
// a local cluster (pid looks them up), then the extra named processes, then
// the calling process itself as "benchmark".
func ClusterProcesses(pid func(name string) (int, error), extra map[string]int) *Processes {
	p := &Processes{}
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
		if id, err := pid(name); err == nil {
			p.names, p.pids = append(p.names, name), append(p.pids, id)
		}
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p.names, p.pids = append(p.names, name), append(p.pids, extra[name])
	}
	p.names, p.pids = append(p.names, "benchmark"), append(p.pids, os.Getpid())
	return p
}

// Mark records the CPU seconds each process has used so far: the start of
// the phase that CPUSince reports.
func (p *Processes) Mark() {
	p.start = p.cpu()
}

// CPUSince is "name seconds" per process for the CPU used since Mark, in
// the order the processes were given.
func (p *Processes) CPUSince() string {
	now := p.cpu()
	var b strings.Builder
	for i, name := range p.names {
		if i > 0 {
			b.WriteString("  ")
		}
		var before float64
		if i < len(p.start) {
			before = p.start[i]
		}
		fmt.Fprintf(&b, "%s %.2f", name, now[i]-before)
	}
	return b.String()
}

func (p *Processes) cpu() []float64 {
	out := make([]float64, len(p.pids))
	for i, pid := range p.pids {
		out[i], _ = ProcCPU(pid)
	}
	return out
}
