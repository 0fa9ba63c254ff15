package actionpath

import (
	"context"
	"io"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/acme/platform-operator/internal/devtools/helmtest"
	"github.com/acme/platform-operator/internal/operator/valuesschema"
)

// helmActions runs Helm's own install and upgrade actions on in-memory
// storage and a Kubernetes client that applies nothing, and records
// whether each ran its schema validation.
type helmActions struct {
	helmclient.ActionInterface // only the methods below are called
	cfg                        *action.Configuration
	validated                  []bool
}

func newHelmActions() *helmActions {
	return &helmActions{cfg: &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...interface{}) {},
	}}
}

func (h *helmActions) Install(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*hrelease.Release, error) {
	i := action.NewInstall(h.cfg)
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	i.ReleaseName, i.Namespace = name, ns
	h.validated = append(h.validated, !i.SkipSchemaValidation)
	return i.Run(chrt, vals)
}

func (h *helmActions) Upgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	u := action.NewUpgrade(h.cfg)
	for _, o := range opts {
		if err := o(u); err != nil {
			return nil, err
		}
	}
	u.Namespace = ns
	h.validated = append(h.validated, !u.SkipSchemaValidation)
	return u.Run(name, chrt, vals)
}

// schemaChart is a chart whose schema wants a greeting of letters.
func schemaChart() *chart.Chart {
	return helmtest.Chart(func(c *chart.Chart) {
		c.Templates = []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: {{ .Values.greeting }}\n")}}
		c.Schema = []byte(`{"type": "object", "properties": {"greeting": {"type": "string", "pattern": "^[a-z]+$"}}}`)
	})
}

// TestCheckSchemas: values that pass reach Helm with its validation off;
// values that fail reach it with its validation on, and it refuses them
// as it does without the layer; so do an upgrade's values that Helm
// replaces, and every action of a kind without schemas.
func TestCheckSchemas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	greeting := func(s interface{}) map[string]interface{} { return map[string]interface{}{"greeting": s} }
	reuse := func(u *action.Upgrade) error {
		u.ReuseValues = true
		return nil
	}

	helm := newHelmActions()
	ac := checkSchemas(valuesschema.New(0, logr.Discard()))(ctx, target{}, libraryClient{helm})

	t.Log("values that fail: Helm validates, and refuses them in its own words")
	_, err := ac.Install("web", "ns", schemaChart(), greeting("Hello!"))
	_, alone := newHelmActions().Install("web", "ns", schemaChart(), greeting("Hello!"))
	g.Expect(alone).To(MatchError(ContainSubstring("- at '/greeting': 'Hello!' does not match pattern '^[a-z]+$'")))
	g.Expect(err).To(MatchError(alone.Error()))
	g.Expect(helm.validated).To(Equal([]bool{true}))

	t.Log("values that pass: Helm does not validate them again")
	_, err = ac.Install("web", "ns", schemaChart(), greeting("hello"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.DryRunUpgrade("web", "ns", schemaChart(), greeting("hi"), helmtest.DryRun)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ac.Upgrade("web", "ns", schemaChart(), greeting("hi"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helm.validated).To(Equal([]bool{true, false, false, false}))

	t.Log("an upgrade's values that fail, or that Helm replaces: Helm validates")
	_, err = ac.Upgrade("web", "ns", schemaChart(), greeting(5))
	g.Expect(err).To(MatchError(ContainSubstring("- at '/greeting': got number, want string")))
	_, err = ac.Upgrade("web", "ns", schemaChart(), nil)
	g.Expect(err).NotTo(HaveOccurred(), "the deployed release's values")
	_, err = ac.Upgrade("web", "ns", schemaChart(), greeting("hey"), reuse)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helm.validated).To(Equal([]bool{true, false, false, false, true, true, true}))

	t.Log("a kind without schemas: Helm validates everything")
	plain := newHelmActions()
	ac = checkSchemas(nil)(ctx, target{}, libraryClient{plain})
	_, err = ac.Install("web", "ns", schemaChart(), greeting("hello"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain.validated).To(Equal([]bool{true}))
}
