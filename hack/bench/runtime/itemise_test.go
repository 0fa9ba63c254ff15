package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestItemiseAudit(t *testing.T) {
	g := NewWithT(t)
	at := func(s int) string { return time.Date(2026, 11, 29, 19, 0, s, 0, time.UTC).Format(time.RFC3339Nano) }
	lines := []string{
		`{"verb":"get","requestURI":"/version","userAgent":"manager/v0.0.0","requestReceivedTimestamp":"` + at(1) + `","responseStatus":{"code":200}}`,
		`{"verb":"update","requestURI":"/apis/web.acme.com/v1alpha1/namespaces/b/nginxes/web-0000/status","userAgent":"manager/v0.0.0","requestReceivedTimestamp":"` + at(2) + `","objectRef":{"resource":"nginxes","subresource":"status"},"responseStatus":{"code":409}}`,
		`{"verb":"create","requestURI":"/api/v1/namespaces/b/secrets","userAgent":"Go-http-client/2.0","requestReceivedTimestamp":"` + at(3) + `","objectRef":{"resource":"secrets"},"responseStatus":{"code":201}}`,
		`{"verb":"create","requestURI":"/apis/networking.k8s.io/v1/ipaddresses","userAgent":"kube-apiserver/v1.35.4","requestReceivedTimestamp":"` + at(3) + `","objectRef":{"resource":"ipaddresses"},"responseStatus":{"code":201}}`,
		`{"verb":"create","requestURI":"/apis/apps/v1/namespaces/b/replicasets","userAgent":"kube-controller-manager/v1.35.4","requestReceivedTimestamp":"` + at(3) + `","objectRef":{"resource":"replicasets"},"responseStatus":{"code":201}}`,
		`{"verb":"create","requestURI":"/apis/web.acme.com/v1alpha1/namespaces/b/nginxes","userAgent":"` + filepath.Base(os.Args[0]) + `/v0.0.0","requestReceivedTimestamp":"` + at(3) + `","objectRef":{"resource":"nginxes"},"responseStatus":{"code":201}}`,
		`{"verb":"create","requestURI":"/api/v1/namespaces/b/secrets","userAgent":"manager/v0.0.0","requestReceivedTimestamp":"` + at(9) + `","objectRef":{"resource":"secrets"},"responseStatus":{"code":201}}`,
	}
	path := writeAudit(t, lines)

	counts, err := countAudit(path, time.Date(2026, 11, 29, 19, 0, 1, 0, time.UTC), time.Date(2026, 11, 29, 19, 0, 9, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counts.items).To(Equal(map[string]int{
		"get version":               1,
		"update nginxes/status 409": 1,
		"create secrets":            1,
	}), "the control plane's and the benchmark's requests, and those outside the window, are left out")
}

func TestClientsAudit(t *testing.T) {
	g := NewWithT(t)
	at := func(s int) string { return time.Date(2026, 11, 29, 19, 0, s, 0, time.UTC).Format(time.RFC3339Nano) }
	line := func(ua string, s int) string {
		return `{"verb":"create","requestURI":"/x","userAgent":"` + ua + `","requestReceivedTimestamp":"` + at(s) + `"}`
	}
	lines := []string{
		line("manager/v0.0.0", 1),
		line("Go-http-client/2.0", 2),
		line("kube-controller-manager/v1.35.4", 3),
		line("kube-controller-manager/v1.35.4", 4),
		line("kube-scheduler/v1.35.4", 4),
		line("kube-apiserver/v1.35.4", 5),
		line(filepath.Base(os.Args[0])+"/v0.0.0", 5),
		line("kube-controller-manager/v1.35.4", 9),
	}
	path := writeAudit(t, lines)

	counts, err := countAudit(path, time.Date(2026, 11, 29, 19, 0, 1, 0, time.UTC), time.Date(2026, 11, 29, 19, 0, 9, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counts.clients).To(Equal(map[string]int{
		"runtime":                 2,
		"kube-controller-manager": 2,
		"kube-scheduler":          1,
		"kube-apiserver":          1,
		"benchmark":               1,
	}), "every client's requests inside the window, the runtime's Helm client counted as the runtime's")
}

// writeAudit writes lines as an audit log in a temporary directory.
func writeAudit(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
