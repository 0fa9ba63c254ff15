package helmconfig

import (
	"fmt"
	"strings"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	res, errs := c.interruptibleKubeClient.Delete(resources)
	c.deletes.add(errs)
	return res, errs
}

// DeleteWithPropagationPolicy deletes resources, keeping the errors; an
// uninstall deletes this way.
func (c *updatingKubeClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	res, errs := c.interruptibleKubeClient.DeleteWithPropagationPolicy(resources, policy)
	c.deletes.add(errs)
	return res, errs
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
