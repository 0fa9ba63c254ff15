package actionpath

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// chartRecorder records the chart and values each action got; Get
// answers with current.
type chartRecorder struct {
	actionClient
	current *hrelease.Release
	chart   string
	vals    map[string]interface{}
}

func (c *chartRecorder) Get(string, ...helmclient.GetOption) (*hrelease.Release, error) {
	if c.current == nil {
		return nil, errors.New("release: not found")
	}
	return c.current, nil
}

func (c *chartRecorder) Install(_, _ string, chrt *chart.Chart, vals map[string]interface{}, _ ...helmclient.InstallOption) (*hrelease.Release, error) {
	c.chart, c.vals = chrt.Metadata.Version, vals
	return &hrelease.Release{}, nil
}

func (c *chartRecorder) Upgrade(_, _ string, chrt *chart.Chart, vals map[string]interface{}, _ ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	c.chart, c.vals = chrt.Metadata.Version, vals
	return &hrelease.Release{}, nil
}

func (c *chartRecorder) DryRunUpgrade(name, ns string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*hrelease.Release, error) {
	return c.Upgrade(name, ns, chrt, vals, opts...)
}

func TestChartVersionLayer(t *testing.T) {
	versionChart := func(v, image string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{Name: "web", Version: v}, Values: map[string]interface{}{"image": map[string]interface{}{"repository": image}}}
	}
	v1, v2 := versionChart("0.1.0", "old-default"), versionChart("0.2.0", "new-default")
	versions := watchconfig.ChartVersions{Default: "0.2.0", Charts: map[string]*chart.Chart{"0.1.0": v1, "0.2.0": v2}}
	unshipped := versionChart("0.0.9", "ancient")
	obj := func(annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("team")
		u.SetName("web")
		u.SetAnnotations(annotations)
		// What the values translator records: the spec's values, the
		// operator's new default image in the image block.
		reconcilerecord.Of(u).SetValues(map[string]interface{}{"replicas": 2, "image": map[string]interface{}{"tag": "2"}}, []string{"image"})
		return u
	}
	running := func(c *chart.Chart) *hrelease.Release {
		return &hrelease.Release{Chart: c, Config: map[string]interface{}{"image": map[string]interface{}{"tag": "1"}}}
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		current     *hrelease.Release
		admitted    bool
		install     bool
		wantChart   string
		wantImage   map[string]interface{}
		wantErr     string
	}{
		{name: "an install renders the default", install: true, wantChart: "0.2.0"},
		{name: "a pinned install renders the pin, with its defaults", install: true, annotations: map[string]string{rollout.PinAnnotation: "0.1.0"},
			wantChart: "0.1.0", wantImage: map[string]interface{}{"repository": "old-default", "tag": "2"}},
		{name: "a pin the operator does not ship is refused", install: true, annotations: map[string]string{rollout.PinAnnotation: "0.0.9"},
			wantErr: `chart version "0.0.9" is not shipped by this operator; it ships 0.1.0, 0.2.0`},
		{name: "a release at the default upgrades with it", current: running(v2), wantChart: "0.2.0"},
		{name: "a release the rollout holds keeps its version and its image", current: running(v1),
			wantChart: "0.1.0", wantImage: map[string]interface{}{"repository": "old-default", "tag": "1"}},
		{name: "a release the rollout admitted moves", current: running(v1), admitted: true, wantChart: "0.2.0"},
		{name: "a held release of a version no longer shipped renders its record's chart", current: running(unshipped), wantChart: "0.0.9"},
		{name: "a pinned release stays on its pin when admitted", current: running(v1), admitted: true,
			annotations: map[string]string{rollout.PinAnnotation: "0.1.0"}, wantChart: "0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			gate := &rollout.Gate{}
			if tc.admitted {
				gate.Admit([]string{"team/web"})
			}
			k := newTestKind("Web")
			k.Versions = &ChartVersions{Versions: versions, Gate: gate}
			rec := &chartRecorder{current: tc.current}
			o := obj(tc.annotations)
			ac := layerOf(k, "chart version").Wrap(context.Background(), target{obj: o, namespace: "team"}, rec)
			var err error
			if tc.install {
				_, err = ac.Install("web", "team", v2, map[string]interface{}{}, nil...)
			} else {
				_, err = ac.DryRunUpgrade("web", "team", v2, map[string]interface{}{}, nil...)
			}
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rec.chart).To(Equal(tc.wantChart))
			if tc.wantImage != nil {
				g.Expect(rec.vals["image"]).To(Equal(tc.wantImage))
				g.Expect(rec.vals["replicas"]).To(Equal(2))
			}
		})
	}
}
