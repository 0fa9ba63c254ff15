package testkit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	hrelease "helm.sh/helm/v3/pkg/release"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helm stores each revision of a release in a Secret labelled
// owner=helm and name=<release>, in the release's namespace.

// ReleaseRevisions lists the revision Secrets of release in ns, by name,
// in the order the API server lists them.
func (k *Kube) ReleaseRevisions(ctx context.Context, ns, release string) ([]string, error) {
	var list corev1.SecretList
	if err := k.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names, nil
}

// Releases maps every Helm release of the cluster, as namespace/name, to
// its revision Secrets, by name, sorted.
func (k *Kube) Releases(ctx context.Context) (map[string][]string, error) {
	var secrets corev1.SecretList
	if err := k.Client.List(ctx, &secrets, client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	revs := map[string][]string{}
	for _, s := range secrets.Items {
		key := s.Namespace + "/" + s.Labels["name"]
		revs[key] = append(revs[key], s.Name)
	}
	for _, v := range revs {
		slices.Sort(v)
	}
	return revs, nil
}

// ReleaseDescription returns the description Helm recorded for a revision
// of release in ns (its record's info.description).
func (k *Kube) ReleaseDescription(ctx context.Context, ns, release string, revision int) (string, error) {
	r, err := k.ReleaseRecord(ctx, ns, release, revision)
	if err != nil {
		return "", err
	}
	return r.Info.Description, nil
}

// ReleaseRecord returns Helm's record of a revision of release in ns.
func (k *Kube) ReleaseRecord(ctx context.Context, ns, release string, revision int) (*hrelease.Release, error) {
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, revision)}, &s); err != nil {
		return nil, err
	}
	// Helm stores the record as base64 of gzipped JSON, inside the
	// Secret's own base64.
	gz, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
	if err != nil {
		return nil, err
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	var record hrelease.Release
	if err := json.NewDecoder(r).Decode(&record); err != nil {
		return nil, err
	}
	return &record, nil
}
