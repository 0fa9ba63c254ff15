// Package hostpath is the local cluster's storage: a provisioner that gives
// every PersistentVolumeClaim of its StorageClass a hostPath
// PersistentVolume in a directory of the cluster's state dir, and deletes
// the volume and its directory once the claim is gone.
//
// The StorageClass binds Immediately rather than WaitForFirstConsumer:
// every Node of a local cluster is this machine (one real node, or kwok's
// fake Nodes, whose Pods never mount anything), so there is no topology to
// wait for, and a claim binds even when no Pod uses it yet, which is what
// tests of charts with PVCs check on fake Nodes.
package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	// StorageClassName is the cluster's default StorageClass.
	StorageClassName = "local-path"
	// ProvisionerName is the StorageClass's provisioner, and the
	// provisioned-by annotation of the volumes this package creates.
	ProvisionerName = "localcluster.platform-operator/hostpath"

	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	defaultClassAnnotation  = "storageclass.kubernetes.io/is-default-class"
)

// StorageClass is the default StorageClass served by the provisioner.
func StorageClass() *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{defaultClassAnnotation: "true"},
		},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
}

// VolumeFor is the PersistentVolume that serves claim from a directory
// under root: pre-bound to the claim (kube-controller-manager completes the
// binding), with the claim's size and access modes.
func VolumeFor(claim *corev1.PersistentVolumeClaim, root string) *corev1.PersistentVolume {
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := claim.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	dirType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        volumeName(claim),
			Annotations: map[string]string{provisionedByAnnotation: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClassName,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind:       "PersistentVolumeClaim",
				APIVersion: "v1",
				Namespace:  claim.Namespace,
				Name:       claim.Name,
				UID:        claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(root, volumeName(claim)),
					Type: &dirType,
				},
			},
		},
	}
}

func volumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// wants reports whether claim is one of ours still waiting for a volume.
func wants(claim *corev1.PersistentVolumeClaim) bool {
	return claim.Spec.StorageClassName != nil && *claim.Spec.StorageClassName == StorageClassName &&
		claim.Spec.VolumeName == "" && claim.DeletionTimestamp == nil &&
		(claim.Spec.VolumeMode == nil || *claim.Spec.VolumeMode == corev1.PersistentVolumeFilesystem)
}

// releasable reports whether volume is one of ours whose claim is gone.
func releasable(volume *corev1.PersistentVolume) bool {
	return volume.Annotations[provisionedByAnnotation] == ProvisionerName &&
		volume.Status.Phase == corev1.VolumeReleased &&
		volume.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete
}

// Provisioner creates and deletes the volumes of StorageClassName.
type Provisioner struct {
	Client kubernetes.Interface
	// Root is the directory that holds one directory per volume.
	Root string
}

// Run ensures the StorageClass exists, then provisions and deletes volumes
// until ctx is done.
func (p *Provisioner) Run(ctx context.Context) error {
	if err := os.MkdirAll(p.Root, 0o755); err != nil {
		return err
	}
	if _, err := p.Client.StorageV1().StorageClasses().Create(ctx, StorageClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", StorageClassName, err)
	}
	factory := informers.NewSharedInformerFactory(p.Client, 10*time.Minute)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	// One pass over everything on any change: a local cluster has few
	// volumes, and a pass is idempotent.
	kick := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { trigger(kick) },
		UpdateFunc: func(any, any) { trigger(kick) },
		DeleteFunc: func(any) { trigger(kick) },
	}
	if _, err := claims.Informer().AddEventHandler(notify); err != nil {
		return err
	}
	if _, err := volumes.Informer().AddEventHandler(notify); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())

	retry := time.NewTicker(5 * time.Second) // failed passes are retried
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-retry.C:
		}
		cl, err := claims.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		for _, c := range cl {
			if wants(c) {
				if err := p.provision(ctx, c); err != nil {
					fmt.Fprintf(os.Stderr, "provisioning %s/%s: %v\n", c.Namespace, c.Name, err)
				}
			}
		}
		vl, err := volumes.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		for _, v := range vl {
			if releasable(v) {
				if err := p.delete(ctx, v); err != nil {
					fmt.Fprintf(os.Stderr, "deleting %s: %v\n", v.Name, err)
				}
			}
		}
	}
}

func trigger(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}

// provision creates the claim's directory, writable by any uid (images run
// as 999, 101, 65532...), and its volume.
func (p *Provisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv := VolumeFor(claim, p.Root)
	dir := pv.Spec.HostPath.Path
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // MkdirAll's mode is masked by umask
		return err
	}
	_, err := p.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		fmt.Fprintf(os.Stderr, "provisioned %s for %s/%s in %s\n", pv.Name, claim.Namespace, claim.Name, dir)
	}
	return err
}

// delete removes a released volume and its directory.
func (p *Provisioner) delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil || filepath.Dir(pv.Spec.HostPath.Path) != filepath.Clean(p.Root) {
		return errors.New("not a volume of this provisioner's directory")
	}
	if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
		return err
	}
	err := p.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		fmt.Fprintf(os.Stderr, "deleted %s\n", pv.Name)
	}
	return err
}
