package helmconfig

import (
	"bytes"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/manifestutil"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// The library ends every action client's post-render chain with its owner
// post-renderer (helmclient.DefaultPostRendererFunc): every rendered
// object gets the custom resource as its controller owner, or, where an
// owner reference cannot point (a cluster-scoped object of a namespaced
// resource, another namespace) or must not (helm.sh/resource-policy:
// keep), the owner annotations that operator-lib's handler maps back.
//
// ownerRenderer is that post-renderer, with the same output byte for
// byte, for less: the library's marshals each object with
// sigs.k8s.io/yaml, which encodes it as JSON and parses the JSON again as
// YAML before writing YAML (manifest.MarshalObject writes the same bytes
// without the round trip), and asks the REST mapper for the scope of each
// object's kind, which the build that parsed it already asked. It also
// hands the objects it wrote, owners set, to the action's client as the
// build of its output (buildKeeper), so that Helm's build of the
// post-rendered manifest right after, and the confinement check before
// it, parse nothing again.
func init() {
	helmclient.DefaultPostRendererFunc = newOwnerRenderer
}

// libraryOwnerRenderer is the library's owner post-renderer, which
// ownerRenderer replaces (TestOwnerRendererWritesWhatTheLibraryWrites).
var libraryOwnerRenderer = helmclient.DefaultPostRendererFunc

// ownerRenderer sets the owner of every object of a manifest (see above).
type ownerRenderer struct {
	rm         meta.RESTMapper
	kubeClient kube.Interface
	owner      client.Object
}

func newOwnerRenderer(rm meta.RESTMapper, kubeClient kube.Interface, owner client.Object) postrender.PostRenderer {
	return &ownerRenderer{rm: rm, kubeClient: kubeClient, owner: owner}
}

// Run returns in with every object's owner set, each object a YAML
// document of its own.
func (r *ownerRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	list, err := r.kubeClient.Build(in, false)
	if err != nil {
		return nil, err
	}
	var (
		out        bytes.Buffer
		built      = make(kube.ResourceList, 0, len(list))
		ownerScope meta.RESTScope // asked at the first object, as the library does
	)
	err = list.Visit(func(info *resource.Info, err error) error {
		if err != nil {
			return err
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(info.Object)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if ownerScope == nil {
			gvk := r.owner.GetObjectKind().GroupVersionKind()
			m, err := r.rm.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return err
			}
			ownerScope = m.Scope
		}
		scope, err := r.scopeOf(info, u)
		if err != nil {
			return err
		}
		if ownerReferenceAllowed(ownerScope, r.owner.GetNamespace(), scope, u.GetNamespace()) && !manifestutil.HasResourcePolicyKeep(u.GetAnnotations()) {
			ref := metav1.NewControllerRef(r.owner, r.owner.GetObjectKind().GroupVersionKind())
			u.SetOwnerReferences(append(u.GetOwnerReferences(), *ref))
		} else if err := sdkhandler.SetOwnerAnnotations(r.owner, u); err != nil {
			return err
		}
		b, err := manifest.MarshalObject(u.Object)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(b)
		owned := *info
		owned.Object = u
		built = append(built, &owned)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if k, ok := r.kubeClient.(buildKeeper); ok {
		k.keepBuild(out.Bytes(), false, built)
	}
	return &out, nil
}

// buildKeeper is a kube client that answers a build of manifest with
// list, the objects that manifest's documents parse to (updatingKubeClient).
// The output of ownerRenderer parses to the objects it wrote
// (TestOwnerRendererKeepsTheBuildOfItsOutput); Helm builds post-rendered
// manifests without validation.
type buildKeeper interface {
	keepBuild(manifest []byte, validate bool, list kube.ResourceList)
}

// scopeOf returns the scope of u's kind: the mapping the build found for
// it, else the REST mapper's.
func (r *ownerRenderer) scopeOf(info *resource.Info, u *unstructured.Unstructured) (meta.RESTScope, error) {
	gvk := u.GroupVersionKind()
	if info.Mapping != nil && info.Mapping.GroupVersionKind == gvk {
		return info.Mapping.Scope, nil
	}
	m, err := r.rm.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	return m.Scope, nil
}

// ownerReferenceAllowed reports whether an object of scope in namespace
// may name an owner of ownerScope in ownerNamespace: a cluster-scoped
// owner may own anything, a namespaced one only objects of its own
// namespace.
func ownerReferenceAllowed(ownerScope meta.RESTScope, ownerNamespace string, scope meta.RESTScope, namespace string) bool {
	if ownerScope.Name() == meta.RESTScopeNameRoot {
		return true
	}
	return scope.Name() != meta.RESTScopeNameRoot && ownerNamespace == namespace
}
