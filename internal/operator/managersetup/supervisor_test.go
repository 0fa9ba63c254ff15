package managersetup

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// fakeManager is a manager whose Start does what its test says; nothing
// else of ctrl.Manager is called.
type fakeManager struct {
	ctrl.Manager
	elected chan struct{}
	// start runs as Start.
	start func(ctx context.Context) error
	// startedWith records whether Start got an already cancelled context.
	startedCancelled bool
}

func newFakeManager(elect bool, start func(ctx context.Context) error) *fakeManager {
	m := &fakeManager{elected: make(chan struct{}), start: start}
	if elect {
		close(m.elected)
	}
	return m
}

func (m *fakeManager) Elected() <-chan struct{} { return m.elected }

func (m *fakeManager) Start(ctx context.Context) error {
	m.startedCancelled = ctx.Err() != nil
	return m.start(ctx)
}

// apiServer answers /version, which Run asks before building a new manager.
func apiServer(t *testing.T) *rest.Config {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.1"}`))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func TestRunReplacesAManagerThatStopsOnItsOwn(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var runs []int
	build := func(run int) (ctrl.Manager, error) {
		mu.Lock()
		runs = append(runs, run)
		mu.Unlock()
		if run == 0 {
			// Leads for a while, then loses its lease: Start returns on its own.
			return newFakeManager(true, func(context.Context) error {
				time.Sleep(100 * time.Millisecond)
				return errors.New("leader election lost")
			}), nil
		}
		return newFakeManager(true, func(ctx context.Context) error { <-ctx.Done(); return nil }), nil
	}
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, apiServer(t), build, logr.Discard()) }()
	g.Eventually(func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), runs...) }).
		WithTimeout(5 * time.Second).Should(Equal([]int{0, 1}))
	g.Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())

	t.Log("the end of the context ends Supervise, without error and without another manager")
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(runs).To(Equal([]int{0, 1}))
}

func TestRunReturnsWhatStopsAManagerThatNeverLed(t *testing.T) {
	g := NewWithT(t)
	boom := errors.New("cache did not sync")
	builds := 0
	build := func(int) (ctrl.Manager, error) {
		builds++
		return newFakeManager(false, func(context.Context) error { return boom }), nil
	}
	// A process that never led has a configuration problem, not an outage:
	// it exits, so that the kubelet's restarts and logs show it.
	g.Expect(Supervise(context.Background(), &rest.Config{}, build, logr.Discard())).To(MatchError(boom))
	g.Expect(builds).To(Equal(1))
}

func TestRunReleasesAManagerWhoseSetupFailed(t *testing.T) {
	g := NewWithT(t)
	setup := errors.New("set up reconciler: no CRD")
	m := newFakeManager(false, func(context.Context) error { return nil })
	build := func(int) (ctrl.Manager, error) { return m, setup }
	g.Expect(Supervise(context.Background(), &rest.Config{}, build, logr.Discard())).To(MatchError(setup))
	g.Expect(m.startedCancelled).To(BeTrue(), "started on a cancelled context, so that it releases what it listens on")
}
