package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// argsDir holds, per process, the arguments it was started with.
const argsDir = "args"

func (p procs) saveArgs(name string, args []string) error {
	if err := os.MkdirAll(filepath.Join(p.stateDir, argsDir), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.stateDir, argsDir, name+".json"), b, 0o644)
}

// StopProcess stops one process of the cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler or kwok) with SIGTERM, SIGKILL
// after 10 s, and waits until it is gone. Its data and ports are kept, so
// StartProcess brings it back as it was; tests use the pair to simulate an
// outage of the API server or etcd.
func (c *Cluster) StopProcess(name string) error {
	pid, err := c.Pid(name)
	if err != nil {
		return err
	}
	stopProcess(pid)
	// After a SIGKILL the process may take a moment to be gone (and reaped,
	// when this process started it).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
	}
	return fmt.Errorf("%s (pid %d) is still running", name, pid)
}

// StartProcess starts a process stopped by StopProcess again, with the
// arguments, ports and data it had. For kube-apiserver it waits until the
// API server answers again.
func (c *Cluster) StartProcess(name string) error {
	b, err := os.ReadFile(filepath.Join(c.stateDir, argsDir, name+".json"))
	if err != nil {
		return fmt.Errorf("arguments of %s: %w", name, err)
	}
	var args []string
	if err := json.Unmarshal(b, &args); err != nil {
		return fmt.Errorf("arguments of %s: %w", name, err)
	}
	if pid, err := c.Pid(name); err == nil && syscall.Kill(pid, 0) == nil {
		return fmt.Errorf("%s is running (pid %d)", name, pid)
	}
	p := procs{binDir: c.binDir, stateDir: c.stateDir}
	if err := p.start(name, args...); err != nil {
		return err
	}
	if name != "kube-apiserver" {
		return nil
	}
	ctx := context.Background()
	return waitFor(ctx, 60*time.Second, func() error { return ready(ctx, c.Server, filepath.Join(c.stateDir, "ca.crt")) })
}

// Pid returns the process id of the cluster process started last as name
// ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
// "kwok").
func (c *Cluster) Pid(name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(c.stateDir, pidFile))
	if err != nil {
		return 0, err
	}
	pid := 0
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == name {
			if n, err := strconv.Atoi(fields[1]); err == nil {
				pid = n
			}
		}
	}
	if pid == 0 {
		return 0, fmt.Errorf("no process %q in this cluster", name)
	}
	return pid, nil
}
