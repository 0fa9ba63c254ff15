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

// operatorPod returns the operator's running Pod.
func operatorPod(g Gomega) corev1.Pod {
	var pods corev1.PodList
	g.ExpectWithOffset(1, cluster.Client.List(context.Background(), &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	g.ExpectWithOffset(1, running).To(HaveLen(1))
	return running[0]
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

// TestOperatorPod: the operator runs from its image as the Pod config/default
// describes: both containers running as the shipped ServiceAccount, both
// Leases held, metrics answered over HTTPS to a scraper bound to the
// metrics-reader ClusterRole and refused to one that is not.
func TestOperatorPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	pod := operatorPod(g)
	g.Expect(pod.Spec.ServiceAccountName).To(Equal("platform-operator-controller-manager"))
	g.Expect(pod.Status.ContainerStatuses).To(HaveLen(2))
	for _, cs := range pod.Status.ContainerStatuses {
		g.Expect(cs.Ready).To(BeTrue(), "container %s", cs.Name)
		g.Expect(cs.Image).To(ContainSubstring(operatorImage))
	}
	out, err := cluster.Kubectl("get", "pods", "-n", operatorNamespace, "-l", "control-plane=controller-manager", "--no-headers")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`\s2/2\s+Running\s`))
	t.Logf("operator pod: %s", strings.TrimSpace(out))

	for _, name := range []string{"platform-operator-helm.acme.com", "platform-operator-extensions.acme.com"} {
		g.Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*lease.Spec.HolderIdentity).To(HavePrefix(pod.Name))
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
