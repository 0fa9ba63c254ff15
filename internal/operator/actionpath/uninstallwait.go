package actionpath

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	hrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
)

// UninstallWaitAnnotation, "true" on a custom resource, keeps it (its
// uninstall finalizer) until every object its release rendered is gone
// from the API server, not only asked to go: objects with finalizers of
// their own, a namespace that terminates. As in operator-sdk's Helm
// operator.
const UninstallWaitAnnotation = "helm.sdk.operatorframework.io/uninstall-wait"

// uninstallWaits is the layer that, for a resource with
// UninstallWaitAnnotation, answers an uninstall with an error while an
// object of the uninstalled release remains; the library keeps the
// finalizer and retries (with backoff) until the answer is no error. The
// manifests of releases uninstalled and still awaited are kept in
// memory: an operator that restarts meanwhile finalizes without waiting.
func uninstallWaits(recorder record.EventRecorder) func(context.Context, target, actionClient) actionClient {
	var awaited sync.Map // release key -> manifest
	return func(_ context.Context, t target, below actionClient) actionClient {
		return &uninstallWaiter{actionClient: below, t: t, awaited: &awaited, recorder: recorder}
	}
}

type uninstallWaiter struct {
	actionClient
	t        target
	awaited  *sync.Map
	recorder record.EventRecorder
}

// Uninstall uninstalls the release, then answers with an error while its
// objects remain.
func (c *uninstallWaiter) Uninstall(name string, opts ...helmclient.UninstallOption) (*hrelease.UninstallReleaseResponse, error) {
	wait, _ := strconv.ParseBool(c.t.obj.GetAnnotations()[UninstallWaitAnnotation])
	key := c.t.key()
	if !wait {
		c.awaited.Delete(key)
		return c.actionClient.Uninstall(name, opts...)
	}
	if manifest, ok := c.awaited.Load(key); ok {
		remaining, err := c.remaining(manifest.(string))
		if err != nil {
			return nil, err
		}
		if len(remaining) > 0 {
			return nil, waitingFor(remaining)
		}
		c.awaited.Delete(key)
		c.recorder.Eventf(c.t.obj, corev1.EventTypeNormal, "UninstallWaited", "Every object of release %s is gone", key)
		// The release is gone: the library hears so and finalizes.
		return c.actionClient.Uninstall(name, opts...)
	}
	resp, err := c.actionClient.Uninstall(name, opts...)
	if err != nil || resp == nil || resp.Release == nil {
		return resp, err
	}
	remaining, err := c.remaining(resp.Release.Manifest)
	if err != nil || len(remaining) == 0 {
		return resp, err
	}
	c.awaited.Store(key, resp.Release.Manifest)
	c.recorder.Eventf(c.t.obj, corev1.EventTypeNormal, "UninstallWaiting",
		"Release %s uninstalled; waiting for its objects to be gone (%s): %s", key, UninstallWaitAnnotation, strings.Join(remaining, ", "))
	return resp, waitingFor(remaining)
}

// waitingFor is the error of an uninstall whose objects remain.
func waitingFor(remaining []string) error {
	return fmt.Errorf("uninstalled; waiting for %d object(s) to be gone (%s): %s", len(remaining), UninstallWaitAnnotation, strings.Join(remaining, ", "))
}

// remaining names the objects of manifest that the API server still has.
func (c *uninstallWaiter) remaining(manifest string) ([]string, error) {
	cfg := c.Config()
	if cfg == nil || cfg.KubeClient == nil {
		return nil, nil
	}
	infos, err := cfg.KubeClient.Build(strings.NewReader(manifest), false)
	if err != nil {
		return nil, fmt.Errorf("read the uninstalled release's objects: %w", err)
	}
	var remaining []string
	for _, info := range infos {
		err := info.Get()
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("read %s %s: %w", info.Mapping.GroupVersionKind.Kind, info.ObjectName(), err)
		default:
			name := info.Name
			if info.Namespace != "" {
				name = info.Namespace + "/" + name
			}
			remaining = append(remaining, info.Mapping.GroupVersionKind.Kind+" "+name)
		}
	}
	return remaining, nil
}
