package actionpath

import (
	"errors"
	"maps"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	hrelease "helm.sh/helm/v3/pkg/release"
)

// Labels on release records: the owner and the digest layers record what
// they know there.

// relabel stores rel again with labels added, without a new revision, and
// returns what it stored.
func relabel(cfg *action.Configuration, rel *hrelease.Release, labels map[string]string) (*hrelease.Release, error) {
	if cfg == nil || cfg.Releases == nil {
		return rel, errors.New("no release storage")
	}
	updated := *rel
	updated.Labels = mergeLabels(rel.Labels, labels)
	if err := cfg.Releases.Update(&updated); err != nil {
		return rel, err
	}
	return &updated, nil
}

// mergeLabels returns a copy of labels with add set on it.
func mergeLabels(labels, add map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+len(add))
	maps.Copy(out, labels)
	maps.Copy(out, add)
	return out
}

// labelInstall sets labels on the revision an install stores.
func labelInstall(labels map[string]string) helmclient.InstallOption {
	return func(i *action.Install) error {
		i.Labels = mergeLabels(i.Labels, labels)
		return nil
	}
}

// labelUpgrade sets labels on the revision an upgrade stores.
func labelUpgrade(labels map[string]string) helmclient.UpgradeOption {
	return func(u *action.Upgrade) error {
		u.Labels = mergeLabels(u.Labels, labels)
		return nil
	}
}
