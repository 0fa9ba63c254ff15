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
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
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
	// skip is set when the integration tests cannot run and should be skipped.
	skip string
	// err is set when the test environment was requested but is broken.
	err error

	cfg *rest.Config
	k8s client.Client
	// logFile receives the runtime's logs.
	logFile string

	runMu   sync.Mutex
	runDone bool
	runErr  error
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		suite.skip = "KUBEBUILDER_ASSETS is not set: integration tests need a directory with etcd and kube-apiserver (`make test` sets it)"
		return m.Run()
	}
	stop, err := startSuite(assets)
	if err != nil {
		suite.err = err
		fmt.Fprintf(os.Stderr, "integration test environment failed: %v\n", err)
	}
	code := m.Run()
	if stop != nil {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the integration test environment: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	if suite.logFile != "" {
		fmt.Fprintf(os.Stderr, "runtime logs: %s\n", suite.logFile)
	}
	return code
}

// startSuite starts envtest and the runtime; the returned function stops both.
func startSuite(assets string) (stop func() error, err error) {
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(assets, bin))
		if err != nil {
			return nil, fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", assets, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("KUBEBUILDER_ASSETS=%s: %s is not an executable file", assets, bin)
		}
	}

	logs, err := os.CreateTemp("", "helmruntime-test-*.log")
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	suite.logFile = logs.Name()
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	started := time.Now()
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	fmt.Fprintf(os.Stderr, "envtest started in %s\n", time.Since(started).Round(time.Millisecond))
	stopEnv := func() error {
		err := env.Stop()
		return errors.Join(err, logs.Close())
	}

	k8s, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create client: %w", err), stopEnv())
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testReleaseNamespace}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		return nil, errors.Join(fmt.Errorf("create release namespace: %w", err), stopEnv())
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
	if err := opts.Complete(Env{Getenv: func(string) string { return "" }}); err != nil {
		return nil, errors.Join(err, stopEnv())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := Run(ctx, cfg, opts)
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
		errs = append(errs, stopEnv())
		return errors.Join(errs...)
	}, nil
}

// requireEnv skips the test when no test environment was requested, fails it
// when the environment is broken or the runtime has exited, and returns the
// shared client otherwise.
func requireEnv(t *testing.T) client.Client {
	t.Helper()
	if suite.skip != "" {
		t.Skip(suite.skip)
	}
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
