package helmconfig

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
)

func TestInterruptibleWait(t *testing.T) {
	stopped := errors.New("leadership lost")
	cases := []struct {
		name string
		// cancelBefore cancels the context before the wait starts;
		// cancelDuring while the wait blocks.
		cancelBefore, cancelDuring bool
		// result is what the underlying wait returns when it finishes.
		result error
		want   error
	}{
		// A wait that finishes returns its own result.
		{name: "finishes", result: nil},
		{name: "fails", result: errors.New("timed out waiting for the condition"), want: errors.New("timed out waiting for the condition")},
		// A wait on a context that ended does not start.
		{name: "already stopped", cancelBefore: true, want: stopped},
		// A blocked wait ends with the context, with its cause.
		{name: "stopped while waiting", cancelDuring: true, want: stopped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			c := &interruptibleKubeClient{ctx: ctx, hookTimeout: time.Minute}
			if tc.cancelBefore {
				cancel(stopped)
			}
			release, started := make(chan struct{}), make(chan struct{})
			defer close(release)
			done := make(chan error, 1)
			go func() {
				done <- c.wait("waiting for the hook", func() error {
					close(started)
					if tc.cancelDuring {
						<-release // Helm's wait would block
					}
					return tc.result
				})
			}()
			if tc.cancelDuring {
				<-started
				cancel(stopped)
			}
			var err error
			g.Eventually(done).Should(Receive(&err))
			switch {
			case tc.want == nil:
				g.Expect(err).NotTo(HaveOccurred())
			case errors.Is(tc.want, stopped):
				g.Expect(err).To(MatchError(stopped))
				g.Expect(err).To(MatchError(ContainSubstring("waiting for the hook interrupted")))
			default:
				g.Expect(err).To(MatchError(tc.want.Error()))
			}
		})
	}
}

func TestInterruptibleBoundsHookWaits(t *testing.T) {
	g := NewWithT(t)
	c := &interruptibleKubeClient{ctx: context.Background(), hookTimeout: 5 * time.Minute}
	g.Expect(c.bounded(0)).To(Equal(5 * time.Minute)) // the library sets none: Helm would wait forever
	g.Expect(c.bounded(-time.Second)).To(Equal(5 * time.Minute))
	g.Expect(c.bounded(30 * time.Second)).To(Equal(30 * time.Second))

	t.Log("a client that is not Helm's own is used as it is")
	var other kube.Interface = &kubefake.PrintingKubeClient{}
	g.Expect(interruptible(context.Background(), other, time.Minute)).To(BeIdenticalTo(other))
	wrapped := interruptible(context.Background(), &kube.Client{}, time.Minute)
	g.Expect(wrapped).To(BeAssignableToTypeOf(&interruptibleKubeClient{}))
}
