package claims

import (
	"context"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/client-go/rest"
)

// Render renders chrt with vals as an install or upgrade does, with the
// same check of the chart's kubeVersion, and returns its manifests (NOTES
// left out). Lookups read the cluster of cfg, bounded by ctx's deadline.
// A chart with dependencies must have had them processed with vals
// (chartutil.ProcessDependenciesWithMerge) by the caller, on a copy of its
// own (manifest.CopyChart): the processing edits the chart.
func Render(ctx context.Context, cfg *rest.Config, chrt *chart.Chart, vals map[string]interface{}, opts chartutil.ReleaseOptions, caps *chartutil.Capabilities) (map[string]string, error) {
	if v := chrt.Metadata.KubeVersion; v != "" && !chartutil.IsCompatibleRange(v, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", v, caps.KubeVersion.String())
	}
	top, err := chartutil.ToRenderValues(chrt, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if deadline, ok := ctx.Deadline(); ok {
		cfg.Timeout = time.Until(deadline)
	}
	files, err := engine.New(cfg).Render(chrt, top)
	if err != nil {
		return nil, err
	}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			delete(files, f)
		}
	}
	// Helm's own split and sort: a manifest it cannot order fails here as
	// it would on install.
	if _, _, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder); err != nil {
		return nil, err
	}
	return files, nil
}
