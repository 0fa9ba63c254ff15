// Package workloadrefs finds the Secrets and ConfigMaps a workload's Pods
// read (environment variables, envFrom, volumes) and reduces them to what
// the operator acts on: which of them are missing, and a checksum of the
// data the Pods read, so that a change of that data rolls the Pods.
//
// It is used by the sidecar's rotation controller (extensions/internal/
// rotation), which records both on the workload, by the admission webhook,
// which warns about missing references at apply, and by package readiness,
// which reads what the rotation controller recorded.
package workloadrefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations the rotation controller keeps on a workload.
const (
	// ChecksumAnnotation, on the workload's metadata, is the checksum of
	// the referenced data last seen; on its Pod template, the checksum the
	// Pods were last rolled for. Only a change of the checksum the
	// controller has already seen touches the Pod template, so a new
	// workload is not rolled when it is first seen.
	ChecksumAnnotation = "platform.acme.com/references-checksum"
	// MissingAnnotation, on the workload's metadata, lists the references
	// that do not exist (as Ref.String), separated by "; ". Absent when
	// none is missing.
	MissingAnnotation = "platform.acme.com/missing-references"
)

// Kinds of a Ref.
const (
	Secret    = "Secret"
	ConfigMap = "ConfigMap"
)

// Ref is one Secret or ConfigMap a Pod template reads.
type Ref struct {
	Kind string // Secret or ConfigMap
	Name string
	// Key is the data key read by a secretKeyRef or configMapKeyRef; empty
	// when the whole object is read (envFrom, a volume).
	Key string
	// Optional references do not keep a Pod from starting when missing.
	Optional bool
}

// String names the reference for people: `Secret "api" key "token"`.
func (r Ref) String() string {
	if r.Key == "" {
		return fmt.Sprintf("%s %q", r.Kind, r.Name)
	}
	return fmt.Sprintf("%s %q key %q", r.Kind, r.Name, r.Key)
}

// ObjectKey is the index key of the object a Ref names: "Secret/api".
func (r Ref) ObjectKey() string { return r.Kind + "/" + r.Name }

// FromPodSpec lists the Secrets and ConfigMaps spec reads, each once, in
// a stable order. Image pull Secrets and ServiceAccount tokens are not
// listed: no Pod needs a restart when they change.
func FromPodSpec(spec *corev1.PodSpec) []Ref {
	var refs []Ref
	opt := func(b *bool) bool { return b != nil && *b }
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				refs = append(refs, Ref{Kind: Secret, Name: r.Name, Key: r.Key, Optional: opt(r.Optional)})
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				refs = append(refs, Ref{Kind: ConfigMap, Name: r.Name, Key: r.Key, Optional: opt(r.Optional)})
			}
		}
		for _, e := range c.EnvFrom {
			if r := e.SecretRef; r != nil {
				refs = append(refs, Ref{Kind: Secret, Name: r.Name, Optional: opt(r.Optional)})
			}
			if r := e.ConfigMapRef; r != nil {
				refs = append(refs, Ref{Kind: ConfigMap, Name: r.Name, Optional: opt(r.Optional)})
			}
		}
	}
	for _, v := range spec.Volumes {
		if s := v.Secret; s != nil {
			refs = append(refs, Ref{Kind: Secret, Name: s.SecretName, Optional: opt(s.Optional)})
		}
		if c := v.ConfigMap; c != nil {
			refs = append(refs, Ref{Kind: ConfigMap, Name: c.Name, Optional: opt(c.Optional)})
		}
		if p := v.Projected; p != nil {
			for _, src := range p.Sources {
				if s := src.Secret; s != nil {
					refs = append(refs, Ref{Kind: Secret, Name: s.Name, Optional: opt(s.Optional)})
				}
				if c := src.ConfigMap; c != nil {
					refs = append(refs, Ref{Kind: ConfigMap, Name: c.Name, Optional: opt(c.Optional)})
				}
			}
		}
	}
	return dedup(refs)
}

// dedup sorts refs and drops repeats; a reference that is optional in one
// place and required in another is required.
func dedup(refs []Ref) []Ref {
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return !a.Optional && b.Optional
	})
	out := refs[:0]
	for _, r := range refs {
		if n := len(out); n > 0 && out[n-1].Kind == r.Kind && out[n-1].Name == r.Name && out[n-1].Key == r.Key {
			continue
		}
		out = append(out, r)
	}
	return out
}

// PodSpecOf returns the Pod template's spec of a Deployment, StatefulSet
// or DaemonSet given as an unstructured object, and false for any other
// kind.
func PodSpecOf(u *unstructured.Unstructured) (*corev1.PodSpec, bool, error) {
	if u.GroupVersionKind().Group != "apps" {
		return nil, false, nil
	}
	var tmpl corev1.PodTemplateSpec
	switch u.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, false, err
		}
		tmpl = d.Spec.Template
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return nil, false, err
		}
		tmpl = s.Spec.Template
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, false, err
		}
		tmpl = d.Spec.Template
	default:
		return nil, false, nil
	}
	return &tmpl.Spec, true, nil
}

// State is what the referenced objects hold for a workload's Pods.
type State struct {
	// Refs is a digest of the references followed: it changes when the
	// workload's Pod template starts or stops reading an object or key
	// (which rolls the Pods by itself).
	Refs string
	// Data is a digest of, for every followed reference, whether its
	// object and key exist and the data the Pods read (the one key, or all
	// of the object): it changes exactly when what a new Pod would read
	// changes.
	Data string
	// Missing lists the required references whose object or key does not
	// exist.
	Missing []Ref
	// Followed counts the references whose data is followed (not
	// skipped); with none, the workload has nothing to roll for.
	Followed int
}

// Checksum is the State as ChecksumAnnotation holds it: "<refs>.<data>".
func (s State) Checksum() string { return s.Refs + "." + s.Data }

// DataChanged reports whether recorded (a Checksum) is of the same
// references as s with other data: what a rollout answers. A recorded
// checksum of other references (the Pod template changed, so its Pods roll
// anyway) or none is not a data change.
func (s State) DataChanged(recorded string) bool {
	refs, data, ok := strings.Cut(recorded, ".")
	return ok && refs == s.Refs && data != s.Data
}

// MissingText is Missing as MissingAnnotation holds it.
func (s State) MissingText() string {
	parts := make([]string, len(s.Missing))
	for i, r := range s.Missing {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}

// Read reads the referenced objects of namespace ns through r (a direct
// API reader: only these objects are read, never listed) and computes
// their State. skip reports objects whose data is not followed (a
// release's own objects, which change only with the release).
func Read(ctx context.Context, r client.Reader, ns string, refs []Ref, skip func(obj client.Object) bool) (State, error) {
	refsHash, dataHash := sha256.New(), sha256.New()
	var st State
	type object struct {
		found, skipped bool
		data           map[string][]byte
	}
	objects := map[string]object{}
	for _, ref := range refs {
		o, ok := objects[ref.ObjectKey()]
		if !ok {
			var obj client.Object = &corev1.ConfigMap{}
			if ref.Kind == Secret {
				obj = &corev1.Secret{}
			}
			err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return State{}, err
			case skip != nil && skip(obj):
				o.skipped = true
			default:
				o = object{found: true, data: map[string][]byte{}}
				switch obj := obj.(type) {
				case *corev1.Secret:
					for k, v := range obj.Data {
						o.data[k] = v
					}
				case *corev1.ConfigMap:
					for k, v := range obj.Data {
						o.data[k] = []byte(v)
					}
					for k, v := range obj.BinaryData {
						o.data[k] = v
					}
				}
			}
			objects[ref.ObjectKey()] = o
		}
		if o.skipped {
			continue
		}
		st.Followed++
		fmt.Fprintf(refsHash, "%s\x00%s\x00%s\x00", ref.Kind, ref.Name, ref.Key)
		fmt.Fprintf(dataHash, "%s\x00%s\x00%s\x00", ref.Kind, ref.Name, ref.Key)
		v, hasKey := o.data[ref.Key]
		switch {
		case !o.found || (ref.Key != "" && !hasKey):
			dataHash.Write([]byte("missing\x00"))
			if !ref.Optional {
				st.Missing = append(st.Missing, ref)
			}
		case ref.Key != "":
			fmt.Fprintf(dataHash, "%d\x00", len(v))
			dataHash.Write(v)
		default:
			keys := make([]string, 0, len(o.data))
			for k := range o.data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(dataHash, "%s\x00%d\x00", k, len(o.data[k]))
				dataHash.Write(o.data[k])
			}
		}
	}
	st.Refs = hex.EncodeToString(refsHash.Sum(nil))[:12]
	st.Data = hex.EncodeToString(dataHash.Sum(nil))[:32]
	return st, nil
}
