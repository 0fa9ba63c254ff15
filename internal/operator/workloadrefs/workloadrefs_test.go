package workloadrefs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestFromPodSpec(t *testing.T) {
	g := NewWithT(t)
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}}}}}},
		Containers: []corev1.Container{{
			Env: []corev1.EnvVar{
				{Name: "A", Value: "plain"},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token", Optional: ptr.To(true)}}},
				{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "region", Optional: ptr.To(true)}}},
				{Name: "E", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "conf", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}},
			}}}},
		},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}
	g.Expect(FromPodSpec(spec)).To(Equal([]Ref{
		{Kind: ConfigMap, Name: "flags"},
		{Kind: ConfigMap, Name: "settings", Key: "region", Optional: true},
		{Kind: ConfigMap, Name: "site"},
		{Kind: Secret, Name: "api", Key: "token"}, // required wins over optional
		{Kind: Secret, Name: "tls"},
	}))
}

func TestRead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	api := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"}, Data: map[string][]byte{"token": []byte("one"), "other": []byte("x")}}
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "own", Annotations: map[string]string{"mine": "yes"}}, Data: map[string][]byte{"password": []byte("p")}}
	c := fake.NewClientBuilder().WithObjects(api, own).Build()
	refs := []Ref{{Kind: Secret, Name: "api", Key: "token"}, {Kind: Secret, Name: "own", Key: "password"}, {Kind: ConfigMap, Name: "flags"}, {Kind: ConfigMap, Name: "opt", Optional: true}}
	skip := func(o client.Object) bool { return o.GetAnnotations()["mine"] == "yes" }

	first, err := Read(ctx, c, "ns", refs, skip)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Followed).To(Equal(3), "the release's own Secret is not followed")
	g.Expect(first.MissingText()).To(Equal(`ConfigMap "flags"`))

	t.Log("a key the Pods do not read changes: same data")
	api.Data["other"] = []byte("y")
	g.Expect(c.Update(ctx, api)).To(Succeed())
	again, err := Read(ctx, c, "ns", refs, skip)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Checksum()).To(Equal(first.Checksum()))

	t.Log("the key the Pods read changes: a data change")
	api.Data["token"] = []byte("two")
	g.Expect(c.Update(ctx, api)).To(Succeed())
	rotated, err := Read(ctx, c, "ns", refs, skip)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rotated.DataChanged(first.Checksum())).To(BeTrue())
	g.Expect(rotated.DataChanged(rotated.Checksum())).To(BeFalse())
	g.Expect(rotated.DataChanged("")).To(BeFalse(), "nothing recorded: first sight, no rollout")

	t.Log("the Pods read other references: not a data change (the template change rolls them)")
	fewer, err := Read(ctx, c, "ns", refs[:1], skip)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fewer.DataChanged(first.Checksum())).To(BeFalse())

	t.Log("the missing ConfigMap appears: a data change, nothing missing")
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flags"}, Data: map[string]string{"a": "1"}})).To(Succeed())
	found, err := Read(ctx, c, "ns", refs, skip)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found.Missing).To(BeEmpty())
	g.Expect(found.DataChanged(rotated.Checksum())).To(BeTrue())
}
