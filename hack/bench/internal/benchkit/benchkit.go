// Package benchkit holds what the benchmark commands under hack/bench
// share: process figures from /proc, metrics scraping, CRD installation,
// parallel creation and percentiles.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/devtools/process"
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

// PollUntil calls done every interval until it reports true or timeout
// has passed; it reports whether done did.
func PollUntil(timeout, interval time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if done() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// Settled waits until the value read returns has not changed for quiet
// and done holds for it (nil: always), at most timeout. It returns how
// long it waited and the last value.
func Settled[T comparable](read func() T, done func(T) bool, quiet, timeout time.Duration) (time.Duration, T) {
	start := time.Now()
	var last T
	first, since := true, time.Now()
	PollUntil(timeout, 250*time.Millisecond, func() bool {
		v := read()
		if first || v != last {
			first, last, since = false, v, time.Now()
		}
		return time.Since(since) >= quiet && (done == nil || done(v))
	})
	return time.Since(start), last
}

// Metric is the sum of the samples of a metric of p whose labels include
// every key=value of labels; 0 when p does not answer (the benchmarks
// poll).
func Metric(p *process.Process, name string, labels ...string) float64 {
	v, err := p.Metric(name, labels...)
	if err != nil {
		return 0
	}
	return v
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
