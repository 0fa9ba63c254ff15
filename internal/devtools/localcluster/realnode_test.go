package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/acme/platform-operator/internal/devtools/localcluster/hostpath"
)

// TestRealNode starts a cluster with a real node and checks what workloads
// rely on: a Pod from a locally built image gets Ready through an HTTP
// readiness probe, another Pod resolves cluster DNS names, reaches the first
// through a ClusterIP Service and writes to a PVC of the default
// StorageClass as a non-root user. Then Down must leave nothing behind.
//
// It needs root and the node's packages and binaries:
// make cluster-smoke-real (LOCALCLUSTER_REAL_NODE=1, LOCALCLUSTER_BIN_DIR).
func TestRealNode(t *testing.T) {
	if os.Getenv("LOCALCLUSTER_REAL_NODE") != "1" {
		t.Skip("set LOCALCLUSTER_REAL_NODE=1 (as root) to start a real node; make cluster-smoke-real does")
	}
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root")
	}
	binDir := os.Getenv("LOCALCLUSTER_BIN_DIR")
	if binDir == "" {
		binDir = "../../../bin/k8s"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stateDir := filepath.Join(t.TempDir(), "cluster")

	start := time.Now()
	c, err := Up(ctx, Config{BinDir: binDir, StateDir: stateDir, RealNode: true, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	downDone := false
	defer func() {
		if !downDone {
			_ = c.Stop()
		}
	}()
	t.Logf("TIMING up (node Ready, DNS ready): %s", time.Since(start).Round(time.Millisecond))
	if c.Registry != RegistryAddress || c.StorageClass != hostpath.StorageClassName {
		t.Errorf("Registry = %q, StorageClass = %q", c.Registry, c.StorageClass)
	}

	// The workload image: the probe program, static, imported into the
	// node's containerd.
	probeBin := filepath.Join(t.TempDir(), "probe")
	build := exec.Command("go", "build", "-o", probeBin, "../../../hack/localnode/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building probe: %v: %s", err, out)
	}
	probe, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	const image = "localcluster.local/probe:v1"
	if err := c.LoadImage(ctx, image, []ImageFile{{Path: "/probe", Mode: 0o755, Data: probe}}, []string{"/probe"}); err != nil {
		t.Fatal(err)
	}

	// The same image through the registry: pushed over plain http, pulled
	// by the node through its localhost:5000 mirror (PullAlways resolves
	// the tag in the registry even though containerd holds the image).
	const pushed = "localhost:5000/localcluster/probe:v1"
	st, err := readNodeState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"tag", image, pushed}, {"push", "--plain-http", pushed}} {
		cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", st.ContainerdSocket, "--namespace", "k8s.io", "images"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ctr images %v: %v: %s", args, err, out)
		}
	}

	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ns := "default"

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	web := probePod("web", pushed, []string{"serve", ":8080"})
	web.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways // from the registry
	web.Labels = map[string]string{"app": "web"}
	web.Spec.RestartPolicy = corev1.RestartPolicyAlways
	web.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	web.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	created := time.Now()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 2*time.Minute, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod web not ready: %s", p.Status.Phase)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING pod create -> Ready (image pulled from the registry, HTTP readiness probe): %s", time.Since(created).Round(time.Millisecond))

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err = cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Service routing is eventually consistent (EndpointSlice, then
	// kube-proxy's next sync): wait until the host reaches the ClusterIP
	// (routed to the bridge, DNATed by kube-proxy) before the client Pod
	// tries.
	svcCreated := time.Now()
	if err := waitFor(ctx, time.Minute, func() error {
		return httpOK(ctx, "http://"+svc.Spec.ClusterIP+"/")
	}); err != nil {
		t.Fatalf("ClusterIP %s from the host: %v", svc.Spec.ClusterIP, err)
	}
	t.Logf("TIMING service create -> ClusterIP answers from the host: %s", time.Since(svcCreated).Round(time.Millisecond))

	// The client resolves both names through CoreDNS, fetches through the
	// Service (kube-proxy) and writes to the PVC as uid 65532.
	// Same image by its registry name: in containerd 1.6 the CRI image
	// cache loses the imported name once the same image is pulled under
	// another (ErrImageNeverPull), so one name per image.
	client := probePod("client", pushed, nil)
	client.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	client.Spec.Containers[0].Command = []string{"/probe", "lookup", "kubernetes.default.svc.cluster.local", "web.default.svc.cluster.local"}
	client.Spec.InitContainers = []corev1.Container{
		withArgs(client.Spec.Containers[0], "dial-api", "dial", "kubernetes.default.svc.cluster.local:443"),
		withArgs(client.Spec.Containers[0], "get-web", "get", "http://web.default.svc.cluster.local/"),
		withArgs(client.Spec.Containers[0], "write-volume", "write", "/data/hello"),
	}
	client.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 2*time.Minute, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return nil
		case corev1.PodFailed:
			t.Fatalf("client pod failed: %s", podLogs(ctx, cs, ns, "client"))
		}
		return fmt.Errorf("client pod %s", p.Status.Phase)
	}); err != nil {
		t.Fatalf("%v: %s", err, podLogs(ctx, cs, ns, "client"))
	}
	logs := podLogs(ctx, cs, ns, "client")
	t.Logf("client pod logs:\n%s", logs)
	for _, want := range []string{"kubernetes.default.svc.cluster.local [10.96.0.1]", "web.default.svc.cluster.local [10.96.", "ok web", "connected to kubernetes.default.svc.cluster.local:443"} {
		if !strings.Contains(logs, want) {
			t.Errorf("client logs lack %q", want)
		}
	}
	got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.ClaimBound {
		t.Errorf("PVC phase = %s, want Bound", got.Status.Phase)
	}
	written, err := os.ReadFile(filepath.Join(stateDir, "volumes", got.Spec.VolumeName, "hello"))
	if err != nil || !bytes.Contains(written, []byte("written by probe")) {
		t.Errorf("file written to the PVC by uid 65532 not on the host: %v", err)
	}

	// A NetworkPolicy denies: with no ingress allowed to web, a Pod that
	// reached it through its Service above cannot any more.
	denyPolicy(ctx, t, cs, ns, pushed)

	// Down leaves nothing: no process, no mount, no bridge, no chain, no
	// ipset.
	pids := clusterPids(t, stateDir)
	stopped := time.Now()
	if err := Down(stateDir); err != nil {
		t.Fatal(err)
	}
	downDone = true
	t.Logf("TIMING down: %s", time.Since(stopped).Round(time.Millisecond))
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d still runs after Down", pid)
		}
	}
	if left := processesMentioning(stateDir); len(left) > 0 {
		t.Errorf("processes left after Down: %v", left)
	}
	if ms := mountsUnder(stateDir); len(ms) > 0 {
		t.Errorf("mounts left after Down: %v", ms)
	}
	if exec.Command("ip", "link", "show", nodeBridge).Run() == nil {
		t.Errorf("bridge %s left after Down", nodeBridge)
	}
	if save, err := exec.Command("iptables-save").Output(); err == nil {
		for _, chain := range []string{":KUBE-", ":CNI-", ":LOCALCLUSTER-"} {
			if bytes.Contains(save, []byte(chain)) {
				t.Errorf("iptables chains %s* left after Down", chain)
			}
		}
	}
	if sets, err := exec.Command("ipset", "list", "-n").Output(); err == nil && bytes.Contains(sets, []byte("KUBE-")) {
		t.Errorf("ipsets left after Down: %s", sets)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("state dir left after Down: %v", err)
	}
}

// denyPolicy selects the web Pod with a policy that allows no ingress and
// checks on the wire that a client Pod's connection fails, then that it
// succeeds again once the policy is gone (so the deny is the policy's).
func denyPolicy(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, image string) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-web"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	// kube-router applies a policy asynchronously; its chain for it shows
	// it did.
	if err := waitFor(ctx, time.Minute, func() error {
		if n := policyChains(); n == 0 {
			return errors.New("no policy chain yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("kube-router did not apply the policy: %v", err)
	}
	t.Logf("TIMING policy create -> enforced by kube-router: %s", time.Since(applied).Round(time.Millisecond))

	dial := func(name string) corev1.PodPhase {
		p := probePod(name, image, nil)
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		p.Spec.Containers[0].Command = []string{"/probe", "dial", "web.default.svc.cluster.local:80"}
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		if err := waitFor(ctx, time.Minute, func() error {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			phase = got.Status.Phase
			if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
				return nil
			}
			return fmt.Errorf("pod %s %s", name, phase)
		}); err != nil {
			t.Fatal(err)
		}
		out, _ := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		t.Logf("%s: %s: %s", name, phase, bytes.TrimSpace(out))
		return phase
	}
	if phase := dial("denied"); phase != corev1.PodFailed {
		t.Errorf("a Pod reached web through a policy that allows no ingress (phase %s)", phase)
	}
	if err := cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "deny-web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, time.Minute, func() error {
		if n := policyChains(); n != 0 {
			return fmt.Errorf("%d policy chains still there", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("kube-router did not remove the policy: %v", err)
	}
	if phase := dial("allowed"); phase != corev1.PodSucceeded {
		t.Errorf("without the policy a Pod still cannot reach web (phase %s)", phase)
	}
}

func probePod(name, image string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true)},
			Containers: []corev1.Container{{
				Name:            name,
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Args:            args,
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{
				Name:         "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}},
			}},
		},
	}
}

// policyChains counts kube-router's chains of NetworkPolicies (one per
// policy that selects a Pod on the node; its default chain aside).
func policyChains() int {
	out, err := exec.Command("iptables-save", "-t", "filter").Output()
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, ":KUBE-NWPLCY-") && !strings.HasPrefix(line, ":KUBE-NWPLCY-DEFAULT ") {
			n++
		}
	}
	return n
}

func withArgs(c corev1.Container, name string, args ...string) corev1.Container {
	c.Name = name
	c.Command = append([]string{"/probe"}, args...)
	c.Args = nil
	return c
}

func podLogs(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	var b strings.Builder
	for _, container := range []string{"dial-api", "get-web", "write-volume", name} {
		out, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		fmt.Fprintf(&b, "[%s] %s", container, out)
		if err != nil {
			fmt.Fprintf(&b, " (logs: %v)", err)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func clusterPids(t *testing.T, stateDir string) []int {
	c := &Cluster{stateDir: stateDir}
	var pids []int
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "docker-registry", "containerd", "kubelet", "kube-proxy", "coredns", "kube-router", "provisioner"} {
		pid, err := c.Pid(name)
		if err != nil {
			t.Errorf("no %s recorded: %v", name, err)
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// processesMentioning lists processes whose command line names dir
// (containerd shims name its socket, the node's processes their config).
func processesMentioning(dir string) []string {
	var left []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(dir)) {
			left = append(left, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return left
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
