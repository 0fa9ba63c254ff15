package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeNodeAnnotation marks the Nodes kwok manages.
const fakeNodeAnnotation = "kwok.x-k8s.io/node"

// writeKubeconfig writes an admin kubeconfig for server.
func writeKubeconfig(path, server, caFile, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// serverFromKubeconfig returns the server URL of the kubeconfig's current
// context.
func serverFromKubeconfig(path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("%s: no current context", path)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return "", fmt.Errorf("%s: no cluster %q", path, ctx.Cluster)
	}
	return cluster.Server, nil
}

// bootstrap registers the fake Nodes and waits until the cluster can run
// Pods: Nodes Ready (when kwok runs, or the real node registers itself) and
// the default ServiceAccount created by kube-controller-manager.
func bootstrap(ctx context.Context, kubeconfig string, nodes int, withKwok, realNode bool) error {
	cs, err := Clientset(kubeconfig)
	if err != nil {
		return err
	}
	if realNode {
		if err := waitFor(ctx, 120*time.Second, func() error {
			n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("node %s not ready", NodeName)
		}); err != nil {
			return fmt.Errorf("waiting for the real node: %w", err)
		}
	}
	if withKwok {
		for i := range nodes {
			if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating fake node: %w", err)
			}
		}
		if err := waitFor(ctx, 60*time.Second, func() error {
			list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			readyNodes := 0
			for _, n := range list.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						readyNodes++
					}
				}
			}
			if readyNodes < nodes {
				return fmt.Errorf("%d of %d nodes ready", readyNodes, nodes)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("waiting for fake nodes: %w", err)
		}
	}
	return waitFor(ctx, 60*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// fakeNode is a Node with room for plenty of Pods, managed by kwok.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{fakeNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  "v1.35.4",
				OperatingSystem: "linux",
				Architecture:    "amd64",
			},
		},
	}
}

// Clientset returns a client of the cluster kubeconfig points to.
func Clientset(kubeconfig string) (*kubernetes.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}
