package real

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operatorPods returns the operator's running Pods (config/manager runs
// two).
func operatorPods(g Gomega) []corev1.Pod {
	var pods corev1.PodList
	g.ExpectWithOffset(1, cluster.Client.List(context.Background(), &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	return running
}

// Leases of the manager (Helm runtime) and the sidecar.
const (
	managerLease    = "platform-operator-helm.acme.com"
	extensionsLease = "platform-operator-extensions.acme.com"
)

// leaseHolder returns the name of the Pod holding the Lease name; its
// holder identity is "<pod name>_<uuid>".
func leaseHolder(g Gomega, name string) string {
	lease := &coordinationv1.Lease{}
	g.ExpectWithOffset(1, cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease)).To(Succeed())
	g.ExpectWithOffset(1, lease.Spec.HolderIdentity).NotTo(BeNil())
	holder, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return holder
}

// operatorPod returns the running operator Pod that leads the manager's
// Lease: the one whose Helm runtime reconciles.
func operatorPod(g Gomega) corev1.Pod {
	holder := leaseHolder(g, managerLease)
	for _, p := range operatorPods(g) {
		if p.Name == holder {
			return p
		}
	}
	g.Expect(holder).To(BeEmpty(), "the manager's leader is not a running operator Pod")
	return corev1.Pod{}
}

// metricsStatus requests /metrics of the operator's metrics Service port
// with token, from this machine through the Service's ClusterIP.
func metricsStatus(port int, token string) (int, string, error) {
	svc := &corev1.Service{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: "platform-operator-controller-manager-metrics-service"}, svc); err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://%s:%d/metrics", svc.Spec.ClusterIP, port), nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// The metrics servers serve a self-signed certificate unless one is
	// mounted; the client's identity is what is checked here.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), nil
}

// TestOperatorPod: the operator runs from its image as the two Pods
// config/default describes: both containers of each running as the shipped
// ServiceAccount, each Lease held by one of them, metrics answered over HTTPS to a scraper bound to the
// metrics-reader ClusterRole and refused to one that is not.
func TestOperatorPod(t *testing.T) {
	g := NewWithT(t)

	pods := operatorPods(g)
	g.Expect(pods).To(HaveLen(2), "two replicas")
	names := []string{}
	for _, pod := range pods {
		g.Expect(pod.Spec.ServiceAccountName).To(Equal("platform-operator-controller-manager"))
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(2))
		for _, cs := range pod.Status.ContainerStatuses {
			g.Expect(cs.Ready).To(BeTrue(), "container %s", cs.Name)
			g.Expect(cs.Image).To(ContainSubstring(operatorImage))
		}
		names = append(names, pod.Name)
	}
	out, err := cluster.Kubectl("get", "pods", "-n", operatorNamespace, "-l", "control-plane=controller-manager", "--no-headers")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`(?s)\s2/2\s+Running\s.*\s2/2\s+Running\s`))
	t.Logf("operator pods:\n%s", strings.TrimSpace(out))

	// Each Lease is held by one of the replicas; the other stands by.
	for _, name := range []string{managerLease, extensionsLease} {
		g.Eventually(func(g Gomega) {
			g.Expect(leaseHolder(g, name)).To(BeElementOf(names))
		}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "Lease %s", name)
	}

	cluster.CreateNamespace(t, "real-metrics")
	cluster.Apply(t, "real-metrics", `apiVersion: v1
kind: ServiceAccount
metadata:
  name: scraper
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: stranger
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: real-metrics-scraper
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: platform-operator-metrics-reader
subjects:
- kind: ServiceAccount
  name: scraper
  namespace: real-metrics
`)
	token := func(sa string) string {
		out, err := cluster.Kubectl("create", "token", sa, "-n", "real-metrics")
		g.Expect(err).NotTo(HaveOccurred(), out)
		return strings.TrimSpace(out)
	}
	scraper, stranger := token("scraper"), token("stranger")
	for _, port := range []int{8443, 8444} {
		g.Eventually(func(g Gomega) {
			code, body, err := metricsStatus(port, scraper)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
		}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "port %d, bound scraper", port)
		code, _, err := metricsStatus(port, stranger)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusForbidden), "port %d, unbound scraper", port)
		// controller-runtime's filter answers a token the API server does
		// not know with 500 ("Authentication failed"), not 401.
		code, body, err := metricsStatus(port, "not-a-token")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).NotTo(Equal(http.StatusOK), "port %d, no identity", port)
		g.Expect(body).NotTo(ContainSubstring("controller_runtime"))
	}
}
