package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/helmruntime"
	"github.com/acme/platform-operator/internal/operator/managersetup"
	"github.com/acme/platform-operator/test/testkit"
)

// shardProcess is a Helm runtime that owns the resources labelled
// platform.acme.com/shard=<name>, as a shard Deployment of
// docs/sharding.md runs it.
func shardProcess(name string) *operatorProcess {
	return &operatorProcess{
		name:       "manager-shard-" + name,
		bin:        env.manager.bin,
		logPath:    filepath.Join(filepath.Dir(env.manager.logPath), "manager-shard-"+name+".log"),
		kubeconfig: env.manager.kubeconfig,
		fixedArgs:  append(slices.Clone(env.manager.fixedArgs), "--shard-selector", managersetup.ShardLabel+"="+name),
	}
}

// TestShardsSplitAndMove runs two shards side by side, in place of the
// suite's runtime: each takes its own Lease and acts only on the resources
// its selector matches; a resource that matches neither is left untouched;
// and a resource whose label moves from one shard to the other keeps its
// release (no reinstall, no uninstall): the new shard upgrades and repairs
// it, the old one never acts on it again. Which shard acted is shown by
// stopping the other one around each step. (Every shard still runs no-op
// reconciles for other shards' resources: its dependent watches are on
// kinds, and an event of a rendered object maps to a custom resource its
// cache does not hold.)
func TestShardsSplitAndMove(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns, name, orphan = "e2e-shards", "moving-nginx", "unsharded-nginx"
	key := client.ObjectKey{Namespace: ns, Name: name}

	// The suite's runtime owns every resource; the shards take its place.
	g.Expect(env.manager.stop()).To(Succeed())
	t.Cleanup(func() {
		if err := env.manager.start(); err != nil {
			t.Errorf("restarting the suite's runtime: %v", err)
		}
	})
	a, b := shardProcess("a"), shardProcess("b")
	for _, p := range []*operatorProcess{a, b} {
		g.Expect(p.start()).To(Succeed())
		t.Cleanup(func() { _ = p.stop() })
	}
	env.CreateNamespace(t, ns)

	t.Log("each shard holds a Lease of its own")
	g.Eventually(func(g Gomega) {
		var leases coordinationv1.LeaseList
		g.Expect(env.Client.List(ctx, &leases, client.InNamespace(operatorNamespace))).To(Succeed())
		held := map[string]bool{}
		for _, l := range leases.Items {
			if strings.HasPrefix(l.Name, helmruntime.DefaultLeaderElectionID+"-shard-") && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				held[l.Name] = true
			}
		}
		g.Expect(held).To(HaveLen(2), "shard Leases: %v", held)
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("a resource of shard a is installed by shard a (shard b stopped)")
	g.Expect(b.stop()).To(Succeed())
	env.ExpectApply(g, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+name+`
  labels:
    `+managersetup.ShardLabel+`: a
spec:
  replicaCount: 1
`)
	expectDeployed(t, testkit.NginxGVK, ns, name, "InstallSuccessful")
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf("sh.helm.release.v1." + name + ".v1"))
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
	installedUID := dep.UID

	t.Log("a resource that matches no shard is left alone: no finalizer, no status, no release")
	g.Expect(b.start()).To(Succeed())
	env.ExpectApply(g, ns, `apiVersion: web.acme.com/v1alpha1
kind: Nginx
metadata:
  name: `+orphan+`
spec:
  replicaCount: 1
`)
	g.Consistently(func(g Gomega) {
		cr, err := env.Get(ctx, testkit.NginxGVK, ns, orphan)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cr.GetFinalizers()).To(BeEmpty())
		g.Expect(cr.Object).NotTo(HaveKey("status"))
		g.Expect(env.ReleaseRevisions(ctx, ns, orphan)).To(BeEmpty())
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("the label moves to shard b (shard a stopped): shard b adopts the release as it is")
	g.Expect(a.stop()).To(Succeed())
	out, err := env.Kubectl("label", "nginx", name, "-n", ns, "--overwrite", managersetup.ShardLabel+"=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectDeployed(t, testkit.NginxGVK, ns, name, "InstallSuccessful")
	g.Consistently(func(g Gomega) {
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf("sh.helm.release.v1." + name + ".v1"))
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(dep.UID).To(Equal(installedUID), "the Deployment was recreated: the release was reinstalled")
	}).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("shard b upgrades it on a spec edit and repairs its drift")
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	expectDeployed(t, testkit.NginxGVK, ns, name, "UpgradeSuccessful")
	g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(ConsistOf(
		"sh.helm.release.v1."+name+".v1", "sh.helm.release.v1."+name+".v2"))
	g.Expect(dep.UID).To(Equal(installedUID))
	g.Expect(env.Client.Delete(ctx, dep)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.UID).NotTo(Equal(installedUID))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("with shard b stopped and shard a back, shard a does not take the resource over")
	g.Expect(a.start()).To(Succeed())
	g.Expect(b.stop()).To(Succeed())
	out, err = env.Kubectl("patch", "nginx", name, "-n", ns, "--type=merge", "-p", `{"spec":{"replicaCount":3}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
		g.Expect(env.ReleaseRevisions(ctx, ns, name)).To(HaveLen(2))
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	// The deletion reaches shard a's dependent watch, which maps it to the
	// resource; shard a must find that it is not its own.
	g.Expect(env.Client.Delete(ctx, dep)).To(Succeed())
	g.Consistently(func(g Gomega) {
		err := env.Client.Get(ctx, key, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "shard a repaired a resource of shard b: %v", err)
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}
