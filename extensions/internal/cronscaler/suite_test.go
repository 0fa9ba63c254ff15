package cronscaler

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
)

// The integration tests of this package share one real API server (etcd +
// kube-apiserver from KUBEBUILDER_ASSETS) with the CronScaler CRD
// installed. They call Reconcile directly with a fake clock, so that time
// is whatever the test says; everything else is the real API server.
var suite struct {
	skip string
	err  error
	k8s  client.Client
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		suite.skip = "KUBEBUILDER_ASSETS is not set: integration tests need a directory with etcd and kube-apiserver (`make test-integration` sets it)"
		return m.Run()
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases", "autoscaling.acme.com_cronscalers.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		suite.err = fmt.Errorf("start envtest: %w", err)
		return m.Run()
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = autoscalingv1alpha1.AddToScheme(scheme)
	suite.k8s, suite.err = client.New(cfg, client.Options{Scheme: scheme})
	return m.Run()
}

// needAPIServer skips or fails a test that needs the API server.
func needAPIServer(t *testing.T) client.Client {
	t.Helper()
	if suite.skip != "" {
		t.Skip(suite.skip)
	}
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	return suite.k8s
}
