package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Fixtures of the chart rollout tests (test/e2e, test/real): the nginx
// chart at several versions and a kind of its own backed by them.

// UnschedulableLabel is the node label the Pods of an UnschedulableNginx
// version need.
const UnschedulableLabel = "rollout.test.acme.com/schedulable"

// NginxVersion writes a copy of the repository's nginx chart (root is the
// repository) at dir/nginx-<version>, with that version in Chart.yaml, and
// returns the directory. unschedulable makes its Pods need a node
// labelled UnschedulableLabel=true.
func NginxVersion(t testing.TB, root, dir, version string, unschedulable bool) string {
	t.Helper()
	dst := filepath.Join(dir, "nginx-"+version)
	CopyTree(t, filepath.Join(root, "helm-charts"), filepath.Join(dir, ".src-"+version), "nginx")
	if err := os.Rename(filepath.Join(dir, ".src-"+version, "nginx"), dst); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, ".src-"+version))
	edit(t, filepath.Join(dst, "Chart.yaml"), func(s string) string {
		return regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(s, "version: "+version)
	})
	if unschedulable {
		edit(t, filepath.Join(dst, "templates", "deployment.yaml"), func(s string) string {
			out := strings.Replace(s, "      {{- with .Values.nodeSelector }}\n      nodeSelector:",
				"      nodeSelector:\n        "+UnschedulableLabel+": \"true\"\n      {{- with .Values.nodeSelector }}", 1)
			if out == s {
				t.Fatal("the nginx chart's deployment template has no nodeSelector block to edit")
			}
			return out
		})
	}
	return dst
}

func edit(t testing.TB, path string, f func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(f(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// NginxKindCRD writes, at dir/crd.yaml, the CRD of the repository's Nginx
// renamed to kind, with plural as its resource, of group, and returns its
// path and name.
func NginxKindCRD(t testing.TB, root, dir, group, kind, plural string) (path, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "web.acme.com_nginxes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(kind)
	name = plural + "." + group
	crd := strings.NewReplacer(
		"nginxes.web.acme.com", name,
		"group: web.acme.com", "group: "+group,
		"kind: Nginx\n", "kind: "+kind+"\n",
		"listKind: NginxList", "listKind: "+kind+"List",
		"plural: nginxes", "plural: "+plural,
		"singular: nginx\n", "singular: "+lower+"\n",
		"- ngx\n", "- "+lower+"\n",
	).Replace(string(b))
	path = filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(path, []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, name
}

// RolloutWatches is a watches file with one entry: kind of group backed by
// the chart at def, the charts at others shipped beside it, each revision
// given readyTimeout, and extra appended to the entry.
func RolloutWatches(group, kind, def string, others []string, readyTimeout, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- group: %s\n  version: v1alpha1\n  kind: %s\n  chart: %s\n", group, kind, def)
	if len(others) > 0 {
		b.WriteString("  chartVersions:\n")
		for _, o := range others {
			fmt.Fprintf(&b, "  - %s\n", o)
		}
	}
	fmt.Fprintf(&b, "  remediation:\n    readyTimeout: %s\n", readyTimeout)
	b.WriteString(extra)
	return b.String()
}
