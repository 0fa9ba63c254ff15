package cronscaler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/acme/platform-operator/extensions/api/v1alpha1"
	"github.com/acme/platform-operator/internal/devtools/testenv"
)

// The integration tests of this package share one real API server (etcd +
// kube-apiserver from KUBEBUILDER_ASSETS) with the CronScaler CRD
// installed (and the Nginx CRD, to stand for a Helm release's custom
// resource). Most call Reconcile directly with a fake clock, so that time
// is whatever the test says; everything else is the real API server. Tests
// of what watches do run the controller in a manager of their own
// (startController).
var suite struct {
	env    *testenv.Env
	err    error
	k8s    client.Client
	cfg    *rest.Config
	scheme *runtime.Scheme
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	suite.env = testenv.Start(
		filepath.Join("..", "..", "..", "config", "crd", "bases", "autoscaling.acme.com_cronscalers.yaml"),
		filepath.Join("..", "..", "..", "config", "crd", "bases", "web.acme.com_nginxes.yaml"),
	)
	defer func() {
		if err := suite.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	if !suite.env.Running() {
		return m.Run()
	}
	cfg := suite.env.Config
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = autoscalingv1alpha1.AddToScheme(scheme)
	suite.cfg, suite.scheme = cfg, scheme
	ctx, stopCache := context.WithCancel(context.Background())
	defer stopCache() // before the API server stops
	suite.k8s, suite.err = indexedClient(ctx, cfg, scheme)
	return m.Run()
}

// indexedClient is a client of the API server whose lists by a field index
// (rival CronScalers, HPAs of a target) are served by an informer cache
// with the controller's indexes, as the manager's client serves them: the
// API server cannot select custom resources by such fields. Everything
// else goes to the API server, so a test sees its own writes at once.
func indexedClient(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (client.Client, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := IndexFields(ctx, c); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the test cache did not sync")
	}
	return listsFromCache{Client: direct, cache: c}, nil
}

type listsFromCache struct {
	client.Client
	cache cache.Cache
}

func (c listsFromCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		return c.cache.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}

// needAPIServer skips or fails a test that needs the API server.
func needAPIServer(t *testing.T) client.Client {
	t.Helper()
	suite.env.Require(t)
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	return suite.k8s
}
