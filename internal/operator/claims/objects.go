// Package claims judges what a release's rendered objects take in the
// cluster: the names of the objects (an object that exists and belongs to
// another release, or to no release) and the hostnames of its Ingresses.
// The admission check (package admissioncheck) asks it before a resource is
// stored; the ownership layer of the runtime asks it when Helm refuses an
// install or upgrade over an object it does not own, so that both answers
// name the holder in the same words.
package claims

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

// The annotations Helm records a release's objects with, and checks before
// it creates an object that exists.
const (
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Object is one object a release renders.
type Object struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Hosts are the hostnames an Ingress serves (its rules and TLS
	// entries), in order, without duplicates.
	Hosts []string
	// References are the Secrets and ConfigMaps the Pods of a workload
	// (Deployment, StatefulSet, DaemonSet) read.
	References []workloadrefs.Ref
	// Scope is the scope of the object's kind as the RESTMapper says;
	// release.ScopeUnknown when it does not know the kind.
	Scope release.Scope
}

// String is "Kind namespace/name", or "Kind name" when cluster-scoped.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.GVK.Kind + " " + o.Name
	}
	return o.GVK.Kind + " " + o.Namespace + "/" + o.Name
}

// FromManifests parses rendered manifests (Helm's template output, one or
// more YAML documents a file) into objects. Namespaced objects without a
// namespace are in ns; a kind the mapper does not know is kept with its
// namespace as written (Helm refuses it at install anyway).
func FromManifests(files map[string]string, ns string, mapper meta.RESTMapper) ([]Object, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []Object
	for _, name := range names {
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(files[name]), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(u.Object) == 0 || u.GetKind() == "" {
				continue
			}
			o := Object{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Hosts: ingressHosts(&u)}
			if spec, ok, err := workloadrefs.PodSpecOf(&u); err == nil && ok {
				o.References = workloadrefs.FromPodSpec(spec)
			}
			if m, err := mapper.RESTMapping(o.GVK.GroupKind(), o.GVK.Version); err == nil {
				if m.Scope.Name() == meta.RESTScopeNameRoot {
					o.Namespace, o.Scope = "", release.ClusterScoped
				} else {
					o.Scope = release.Namespaced
					if o.Namespace == "" {
						o.Namespace = ns
					}
				}
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// Placements returns where objs land, for the confinement rule
// (release.Confinement).
func Placements(objs []Object) []release.Placement {
	out := make([]release.Placement, len(objs))
	for i, o := range objs {
		out[i] = release.Placement{GVK: o.GVK, Name: o.Name, Namespace: o.Namespace, Scope: o.Scope}
	}
	return out
}

// ingressHosts returns the hosts of an Ingress, nil for any other kind (or
// an Ingress that does not parse, which Helm refuses anyway).
func ingressHosts(u *unstructured.Unstructured) []string {
	if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: networkingv1.GroupName, Kind: "Ingress"}) {
		return nil
	}
	var in networkingv1.Ingress
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &in); err != nil {
		return nil
	}
	return IngressHosts(&in)
}

// IngressHosts returns the hosts an Ingress serves: its rules' and its TLS
// entries', in order, without duplicates.
func IngressHosts(in *networkingv1.Ingress) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, r := range in.Spec.Rules {
		add(r.Host)
	}
	for _, t := range in.Spec.TLS {
		for _, h := range t.Hosts {
			add(h)
		}
	}
	return out
}

// Checker reads who holds objects and hosts. Reader must read from the API
// server (an uncached reader): objects of every kind a chart renders are
// read by metadata only.
type Checker struct {
	Reader client.Reader
	// Ingresses finds the Ingresses that serve a host; nil skips the
	// hostname check.
	Ingresses IngressIndex
	// HostScope is how far a hostname must be unique.
	HostScope HostScope
}

// ObjectClashError is an object a release renders that exists and belongs
// to another release, or to none.
type ObjectClashError struct {
	Object Object
	// Holder is who holds the object: the resource of another release, a
	// release the operator did not install, or "" for an object of no
	// release.
	Holder string
	// Claimant is the kind of the resource that was refused; Field the
	// spec value that names the object, if one does.
	Claimant, Field string
}

func (e *ObjectClashError) Error() string {
	hint := "rename this " + e.Claimant
	if e.Field != "" {
		hint = "choose another " + e.Field
	}
	if e.Holder == "" {
		return fmt.Sprintf("%s exists and belongs to no release of this operator; %s, or remove that object", e.Object, hint)
	}
	return fmt.Sprintf("%s belongs to %s; %s", e.Object, e.Holder, hint)
}

// Claimant is the resource whose release is checked.
type Claimant struct {
	Owner release.Owner
	// ReleaseName and ReleaseNamespace locate its release.
	ReleaseName, ReleaseNamespace string
	// Spec is the resource's spec: an answer names the value that named
	// the object or host, when one did.
	Spec map[string]interface{}
}

// Objects returns the first object of objs that exists and belongs to
// another release than the claimant's: the object Helm would refuse to
// install over. nil when every object is free or the release's own.
func (c Checker) Objects(ctx context.Context, objs []Object, claimant Claimant) (*ObjectClashError, error) {
	for _, o := range objs {
		if o.Name == "" {
			continue
		}
		var m metav1.PartialObjectMetadata
		m.SetGroupVersionKind(o.GVK)
		err := c.Reader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &m)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("look up %s: %w", o, err)
		}
		relName, relNS := m.GetAnnotations()[ReleaseNameAnnotation], m.GetAnnotations()[ReleaseNamespaceAnnotation]
		if relName == claimant.ReleaseName && relNS == claimant.ReleaseNamespace {
			continue
		}
		clash := &ObjectClashError{Object: o, Claimant: claimant.Owner.GroupKind.Kind, Field: specPathOf(claimant.Spec, o.Name)}
		if relName != "" {
			if clash.Holder, _, err = c.releaseHolder(ctx, relName, relNS, claimant.Owner); err != nil {
				return nil, err
			}
		}
		return clash, nil
	}
	return nil, nil
}

// releaseHolder names the resource that owns release name in ns, from the
// labels (or owner reference) of its latest record; a release without an
// owner of ours is named as a Helm release. ours reports whether it has
// an owner of ours.
func (c Checker) releaseHolder(ctx context.Context, name, ns string, claimant release.Owner) (string, bool, error) {
	var records metav1.PartialObjectMetadataList
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.Reader.List(ctx, &records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		return "", false, fmt.Errorf("list the records of release %s/%s: %w", ns, name, err)
	}
	if latest := release.LatestRecord(records.Items); latest != nil {
		if owner, ok := release.RecordOwner(latest, ns, claimant); ok {
			return owner.String(), true, nil
		}
	}
	return fmt.Sprintf("Helm release %s/%s, which this operator did not install", ns, name), false, nil
}

// specPathOf returns the path of the first string in spec (in key order)
// equal to value, as "spec.a.b" or "spec.a[0].b"; "" when none is.
func specPathOf(spec map[string]interface{}, value string) string {
	var walk func(v interface{}, path string) string
	walk = func(v interface{}, path string) string {
		switch t := v.(type) {
		case string:
			if t == value {
				return path
			}
		case map[string]interface{}:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if p := walk(t[k], path+"."+k); p != "" {
					return p
				}
			}
		case []interface{}:
			for i, e := range t {
				if p := walk(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p
				}
			}
		}
		return ""
	}
	if value == "" {
		return ""
	}
	return walk(spec, "spec")
}

// ImportRefused reports whether err is Helm's refusal to create an object
// that exists and is not the release's own (an install, or an upgrade that
// adds the object).
func ImportRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exists and cannot be imported into the current release")
}
