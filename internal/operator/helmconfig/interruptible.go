package helmconfig

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
)

// DefaultHookTimeout bounds how long a Helm action waits for a hook (a Job
// or Pod) when the action sets no timeout. The library sets none, and Helm
// then waits forever: a hook that never completes would hold its release
// pending and a worker busy for good. Five minutes is the helm CLI's
// default.
const DefaultHookTimeout = 5 * time.Minute

// interruptibleKubeClient is Helm's Kubernetes client with waits that end
// when ctx ends. ctx is the reconcile's context, which controller-runtime
// cancels when the manager shuts down (SIGTERM) or loses its leadership.
//
// Helm's actions take no context (the library calls Run, not
// RunWithContext, and RunWithContext only stops waiting for a goroutine
// that goes on in the background). The only long parts of an action are
// these waits; everything else is a few API requests. A wait that returns
// an error makes Helm finish the action the way it finishes a failed hook:
// it records the revision as failed, and the library then uninstalls a
// failed install or rolls a failed upgrade back. So on SIGTERM the release
// ends deployed or failed, never pending, well within the grace period.
type interruptibleKubeClient struct {
	*kube.Client
	ctx         context.Context
	hookTimeout time.Duration
}

// interruptible wraps Helm's client kc; any other implementation is
// returned as it is.
func interruptible(ctx context.Context, kc kube.Interface, hookTimeout time.Duration) kube.Interface {
	c, ok := kc.(*kube.Client)
	if !ok {
		return kc
	}
	return &interruptibleKubeClient{Client: c, ctx: ctx, hookTimeout: hookTimeout}
}

// errInterrupted is returned by a wait that ended because ctx ended.
func (c *interruptibleKubeClient) errInterrupted(what string) error {
	return fmt.Errorf("%s interrupted: the operator is shutting down or lost its leadership: %w", what, context.Cause(c.ctx))
}

// wait runs f until it returns or ctx ends. f goes on in the background
// after an interruption; the process is about to stop anyway.
func (c *interruptibleKubeClient) wait(what string, f func() error) error {
	if c.ctx.Err() != nil {
		return c.errInterrupted(what)
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-c.ctx.Done():
		return c.errInterrupted(what)
	}
}

func (c *interruptibleKubeClient) bounded(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return c.hookTimeout
	}
	return timeout
}

// WatchUntilReady waits for hook resources (Jobs, Pods) to complete.
func (c *interruptibleKubeClient) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait("waiting for the hook", func() error { return c.Client.WatchUntilReady(resources, c.bounded(timeout)) })
}

// Wait waits for resources to be ready.
func (c *interruptibleKubeClient) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait("waiting for resources", func() error { return c.Client.Wait(resources, c.bounded(timeout)) })
}

// WaitWithJobs waits for resources, Jobs included, to be ready.
func (c *interruptibleKubeClient) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait("waiting for resources", func() error { return c.Client.WaitWithJobs(resources, c.bounded(timeout)) })
}

// WaitForDelete waits for resources to be deleted.
func (c *interruptibleKubeClient) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait("waiting for deletion", func() error { return c.Client.WaitForDelete(resources, c.bounded(timeout)) })
}

// WaitAndGetCompletedPodPhase waits for a Pod to complete.
func (c *interruptibleKubeClient) WaitAndGetCompletedPodPhase(name string, timeout time.Duration) (corev1.PodPhase, error) {
	phases := make(chan corev1.PodPhase, 1)
	err := c.wait("waiting for the pod", func() error {
		phase, err := c.Client.WaitAndGetCompletedPodPhase(name, c.bounded(timeout))
		phases <- phase
		return err
	})
	select {
	case phase := <-phases:
		return phase, err
	default: // interrupted
		return corev1.PodUnknown, err
	}
}
