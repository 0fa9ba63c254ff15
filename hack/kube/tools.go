//go:build tools

// Package kube pins the node commands the Makefile builds from this module
// besides the control plane program (cmd/kube, which imports its own).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
