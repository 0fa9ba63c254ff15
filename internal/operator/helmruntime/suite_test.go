package helmruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/acme/platform-operator/internal/devtools/testenv"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The integration tests share one API server and one running runtime per
// package; TestMain starts both.

const (
	// testReleaseNamespace stores the releases of cluster-scoped test kinds.
	testReleaseNamespace = "helm-releases"
	// testDefaultMaxConcurrentReconciles is --max-concurrent-reconciles in tests.
	testDefaultMaxConcurrentReconciles = 2
)

var suite struct {
	env *testenv.Env
	// err is why the suite's runtime could not start.
	err error

	cfg     *rest.Config
	k8s     client.Client
	logFile string
	// requests holds what the runtime sent, by namespace.
	requests requestLog

	runMu   sync.Mutex
	runDone bool
	runErr  error
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	suite.env = testenv.Start(filepath.Join("testdata", "crds"))
	var stop func() error
	if suite.env.Running() {
		var err error
		if stop, err = startRuntime(suite.env.Config); err != nil {
			suite.err = err
			fmt.Fprintf(os.Stderr, "integration test environment failed: %v\n", err)
		}
	}
	code := m.Run()
	if stop != nil {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the runtime: %v\n", err)
			code = max(code, 1)
		}
	}
	if err := suite.env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the integration test environment: %v\n", err)
		code = max(code, 1)
	}
	if suite.logFile != "" {
		if code == 0 { // kept only to read after a failure
			_ = os.Remove(suite.logFile)
		} else {
			fmt.Fprintf(os.Stderr, "runtime logs: %s\n", suite.logFile)
		}
	}
	return code
}

// startRuntime runs the runtime (Run) against cfg with the test watches,
// its logs in a file.
func startRuntime(cfg *rest.Config) (stop func() error, err error) {
	logs, err := os.CreateTemp("", "helmruntime-test-*.log")
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	suite.logFile = logs.Name()
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))

	closeLogs := logs.Close

	k8s, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create client: %w", err), closeLogs())
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testReleaseNamespace}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		return nil, errors.Join(fmt.Errorf("create release namespace: %w", err), closeLogs())
	}
	suite.cfg, suite.k8s = cfg, k8s

	opts := DefaultOptions()
	opts.WatchesFile = filepath.Join("testdata", "watches.yaml")
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	// Long enough that only a watch's own period or a dependent watch can
	// repair a deleted child during a test.
	opts.ReconcilePeriod = time.Hour
	opts.MaxConcurrentReconciles = testDefaultMaxConcurrentReconciles
	opts.ReleaseNamespace = testReleaseNamespace
	if err := opts.Complete(watchconfig.Env{Getenv: func(string) string { return "" }}); err != nil {
		return nil, errors.Join(err, closeLogs())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtimeCfg := rest.CopyConfig(cfg)
		runtimeCfg.Wrap(suite.requests.wrap)
		err := Run(ctx, runtimeCfg, opts)
		suite.runMu.Lock()
		suite.runDone, suite.runErr = true, err
		suite.runMu.Unlock()
	}()

	return func() error {
		cancel()
		var errs []error
		select {
		case <-done:
			suite.runMu.Lock()
			errs = append(errs, suite.runErr)
			suite.runMu.Unlock()
		case <-time.After(time.Minute):
			errs = append(errs, errors.New("runtime did not stop within a minute of cancellation"))
		}
		errs = append(errs, closeLogs())
		return errors.Join(errs...)
	}, nil
}

// requireEnv skips the test when no test environment was requested, fails it
// when the environment is broken or the runtime has exited, and returns the
// shared client otherwise.
func requireEnv(t *testing.T) client.Client {
	t.Helper()
	suite.env.Require(t)
	if suite.err != nil {
		t.Fatalf("integration test environment is broken: %v", suite.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runtime logs: %s", suite.logFile)
		}
	})
	suite.runMu.Lock()
	defer suite.runMu.Unlock()
	if suite.runDone {
		t.Fatalf("the runtime exited early: %v (logs: %s)", suite.runErr, suite.logFile)
	}
	return suite.k8s
}
