package helmconfig

import (
	"fmt"
	"strings"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/resource"
)

// Helm's uninstall returns "failed to delete release: <name>" when an
// object cannot be deleted, and writes why only to its log. The
// resource's condition and Event should say why (a right the release's
// ServiceAccount lacks, an admission webhook's refusal), so the Kubernetes
// client keeps the errors of its deletes, and the action client adds them
// to the uninstall's error.

// deleteErrors keeps the errors of the deletes of one action
// configuration.
type deleteErrors struct {
	mu   sync.Mutex
	errs []error
}

func (d *deleteErrors) add(errs []error) {
	d.mu.Lock()
	d.errs = append(d.errs, errs...)
	d.mu.Unlock()
}

// take returns the errors kept, and forgets them.
func (d *deleteErrors) take() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	errs := d.errs
	d.errs = nil
	return errs
}

// Delete deletes resources, keeping the errors.
func (c *updatingKubeClient) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	return c.deleteEach(resources, c.interruptibleKubeClient.Delete)
}

// DeleteWithPropagationPolicy deletes resources, keeping the errors; an
// uninstall deletes this way.
func (c *updatingKubeClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	return c.deleteEach(resources, func(rs kube.ResourceList) (*kube.Result, []error) {
		return c.interruptibleKubeClient.DeleteWithPropagationPolicy(rs, policy)
	})
}

// deleteEach deletes resources with del and keeps the errors. When the
// release's namespace is being deleted (deletingNamespace), a delete
// there that the API server forbids counts as done: the namespace's
// deletion removes the object, and the operator's own rights (an
// uninstall there runs with them) need not include it.
func (c *updatingKubeClient) deleteEach(resources kube.ResourceList, del func(kube.ResourceList) (*kube.Result, []error)) (*kube.Result, []error) {
	c.forgetLeft(resources)
	if c.deletingNamespace == "" {
		res, errs := del(resources)
		c.deletes.add(errs)
		return res, errs
	}
	inside := resources.Filter(func(info *resource.Info) bool { return info.Namespace == c.deletingNamespace })
	outside := resources.Difference(inside)
	res := &kube.Result{}
	var errs []error
	if len(outside) > 0 {
		r, es := del(outside)
		res.Deleted = append(res.Deleted, deleted(r)...)
		errs = append(errs, es...)
	}
	if len(inside) > 0 {
		r, es := del(inside)
		res.Deleted = append(res.Deleted, deleted(r)...)
		for _, e := range es {
			if !apierrors.IsForbidden(e) {
				errs = append(errs, e)
			}
		}
	}
	c.deletes.add(errs)
	return res, errs
}

func deleted(r *kube.Result) kube.ResourceList {
	if r == nil {
		return nil
	}
	return r.Deleted
}

// uninstallCauses is an action client whose uninstall errors carry the
// errors of the deletes that failed.
type uninstallCauses struct {
	helmclient.ActionInterface
}

func (c uninstallCauses) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	kc, _ := c.Config().KubeClient.(*updatingKubeClient)
	if kc != nil {
		kc.deletes.take()
	}
	res, err := c.ActionInterface.Uninstall(name, opts...)
	if err == nil || kc == nil {
		return res, err
	}
	causes := kc.deletes.take()
	if len(causes) == 0 {
		return res, err
	}
	msgs := make([]string, 0, len(causes))
	for _, e := range causes {
		msgs = append(msgs, e.Error())
	}
	return res, fmt.Errorf("%w: %s", err, strings.Join(msgs, "; "))
}
