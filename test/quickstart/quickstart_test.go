// Package quickstart runs the README's quick start as a new user does, on
// a copy of the repository: `make run` exactly as written, with no cluster
// in the kubeconfig, then the README's second-terminal commands verbatim.
// It has a package of its own so that `go test ./test/...` runs it beside
// the e2e suite (it starts its own cluster and shares nothing with it).
package quickstart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acme/platform-operator/test/testkit"
)

// root is the repository.
var root = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "..", "..")
}()

// TestQuickStartAsWritten: in a copy of the repository, the README's `make
// run` starts a local cluster and the operator; the README's commands for
// a second terminal, run verbatim, create the samples and list them Ready;
// every sample is Ready but webapp-full, which the README says is not, and
// why; the operator logs no ERROR; Ctrl-C stops everything make run
// started. (`make test`, the block's second line, is what runs this.)
func TestQuickStartAsWritten(t *testing.T) {
	k8sBin := filepath.Join(root, "bin", "k8s")
	if _, err := os.Stat(filepath.Join(k8sBin, "kube-apiserver")); err != nil {
		t.Skip("no control plane in bin/k8s; make test builds it (make cluster-binaries)")
	}
	repo := copyRepository(t, k8sBin)

	start := testkit.ShellLines(t, filepath.Join(root, "README.md"), 0)
	if len(start) == 0 || !strings.HasPrefix(start[0], "make run") {
		t.Fatalf("the README's first command is %q, not make run", start)
	}
	run := startMakeRun(t, repo, start[0])

	// make run prints what to type in a second terminal once the CRDs
	// and the webhook are in place and the operator starts.
	run.waitFor(t, "Press Ctrl-C to stop.", 10*time.Minute)

	secondTerminal := testkit.ShellLines(t, filepath.Join(root, "README.md"), 1)
	script := "set -e\n" + strings.Join(secondTerminal, "\n")
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = repo
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's second-terminal commands failed: %v\n%s\nmake run:\n%s", err, out, run.output())
	}
	t.Logf("second terminal:\n%s", out)
	for _, name := range []string{"nginx-full", "nginx-sample", "nginx-scheduled"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s+\d+\s+\d+\.\d+\.\d+\S*\s+True\s+True\s`).Match(out) {
			t.Errorf("kubectl get nginx does not list %s with its chart version, Ready and Deployed:\n%s", name, out)
		}
	}

	// Every sample becomes Ready but webapp-full: the README says that on
	// one fake Node its three Pods with required anti-affinity cannot all
	// run.
	kubectl := func(args ...string) (string, error) {
		c := exec.Command(filepath.Join(repo, "bin", "k8s", "kubectl"), args...)
		c.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(repo, "bin", "local", "kubeconfig"))
		b, err := c.CombinedOutput()
		return string(b), err
	}
	const readyOf = `{range .items[*]}{.kind}/{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}:{.status.conditions[?(@.type=="Ready")].message}{"\n"}{end}`
	var last string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got, err := kubectl("get", "nginx,webapp.v1alpha1.web.acme.com,namespacetenant", "-A", "-o", "jsonpath="+readyOf)
		last = got
		if err == nil && samplesAsDocumented(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the samples are not as the README says (every one Ready, webapp-full not, for its anti-affinity):\n%s%v", last, err)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("samples:\n%s", last)

	run.stop(t)
	if lines := errorLines(run.output()); len(lines) > 0 {
		t.Errorf("make run logged ERROR on the quick start's happy path:\n%s", strings.Join(lines, "\n"))
	}
}

// samplesAsDocumented reports whether the listing (kind/name=status:message
// per line) shows every sample Ready but webapp-full, which waits for
// nodes for its anti-affinity.
func samplesAsDocumented(listing string) bool {
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		id, rest, ok := strings.Cut(line, "=")
		if !ok {
			return false
		}
		status, message, _ := strings.Cut(rest, ":")
		n++
		if id == "WebApp/webapp-full" {
			if status != "False" || !strings.Contains(message, "anti-affinity") {
				return false
			}
			continue
		}
		if status != "True" {
			return false
		}
	}
	return n >= 8
}

// errorLines returns the lines of a development-mode zap log at level ERROR.
func errorLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "\tERROR\t") {
			out = append(out, line)
		}
	}
	return out
}

// copyRepository copies what make run reads into a temporary directory.
// Its bin/k8s links to the suite's control plane, so that nothing is
// built again but the operator (into the copy's own bin) and localcluster
// (a program make run always rebuilds, into the copy too). Every file is
// older than the control plane, so make finds it up to date.
func copyRepository(t *testing.T, k8sBin string) string {
	t.Helper()
	repo := t.TempDir()
	testkit.CopyTree(t, root, repo, "README.md", "Makefile", "make", "go.mod", "go.sum", "PROJECT", "watches.yaml",
		"cmd", "internal", "extensions", "hack", "config", "helm-charts")
	err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, time.Unix(0, 0), time.Unix(0, 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(repo, "bin", "k8s")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(k8sBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "localcluster" {
			continue
		}
		target := filepath.Join(k8sBin, e.Name())
		if e.Type()&os.ModeSymlink != 0 { // a command of the control plane program: a link to it by name
			if target, err = os.Readlink(target); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(target, filepath.Join(bin, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// makeRun is `make run` running in its own process group, its output
// collected.
type makeRun struct {
	cmd *exec.Cmd
	out *syncBuffer
	// exited is closed when make run has ended, with err.
	exited chan struct{}
	err    error
}

func startMakeRun(t *testing.T, repo, line string) *makeRun {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = repo
	// No cluster in the kubeconfig: make run starts a local one, as on a
	// new machine.
	// Nor a make above it: under make test, MAKEFLAGS and MAKELEVEL
	// would reach this make.
	cmd.Env = []string{"KUBECONFIG=" + filepath.Join(repo, "no-kubeconfig")}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "KUBECONFIG" && name != "MAKEFLAGS" && name != "MAKELEVEL" && name != "MFLAGS" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &makeRun{cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			r.stop(t)
		}
	})
	return r
}

func (r *makeRun) output() string { return r.out.String() }

// waitFor waits until make run has printed text.
func (r *makeRun) waitFor(t *testing.T, text string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !strings.Contains(r.output(), text) {
		select {
		case <-r.exited:
			t.Fatalf("make run ended (%v) before it printed %q:\n%s", r.err, text, r.output())
		case <-ctx.Done():
			t.Fatalf("make run did not print %q within %s:\n%s", text, timeout, r.output())
		case <-time.After(time.Second):
		}
	}
}

// stop presses Ctrl-C: SIGINT to make run's process group, as a terminal
// does. make run stops the operator and the cluster it started.
func (r *makeRun) stop(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-r.exited:
		if r.err != nil {
			t.Logf("make run after Ctrl-C: %v", r.err)
		}
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		t.Errorf("make run did not stop within 2 minutes of Ctrl-C:\n%s", r.output())
		<-r.exited
	}
	if !strings.Contains(r.output(), "stopping the local cluster started by make run") {
		t.Errorf("make run did not stop its cluster:\n%s", r.output())
	}
}

// syncBuffer is a bytes.Buffer safe for the writes of a child's two
// streams and the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
