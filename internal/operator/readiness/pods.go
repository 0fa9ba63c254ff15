package readiness

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// maxPodsDescribed bounds how many Pods one workload's detail names.
const maxPodsDescribed = 3

// DescribePods says why the Pods of a workload that is not ready are not,
// one "Pod name: why" per Pod that is not Ready, joined by "; ". claims
// holds the phase of the PersistentVolumeClaims the Pods mount, by name;
// a claim that is not Bound is named as "PersistentVolumeClaim name:
// Pending". Pods that are Ready, or being deleted, are left out; an empty
// result means that no Pod explains anything.
func DescribePods(pods []corev1.Pod, claims map[string]corev1.PersistentVolumeClaimPhase) string {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var parts []string
	seenClaims := map[string]bool{}
	described := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || podReady(p) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || seenClaims[v.PersistentVolumeClaim.ClaimName] {
				continue
			}
			name := v.PersistentVolumeClaim.ClaimName
			seenClaims[name] = true
			if phase, ok := claims[name]; ok && phase != corev1.ClaimBound {
				parts = append(parts, fmt.Sprintf("PersistentVolumeClaim %s: %s", name, phase))
			}
		}
		if described == maxPodsDescribed {
			continue
		}
		if why := podProblem(p); why != "" {
			parts = append(parts, "Pod "+p.Name+": "+why)
			described++
		}
	}
	return strings.Join(parts, "; ")
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podProblem names the first reason a Pod is not ready: a container that
// waits (ImagePullBackOff and its image, CrashLoopBackOff), a container
// that runs but is not ready, a Pod that cannot be scheduled, or its phase.
func podProblem(p *corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			switch w.Reason {
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
				return fmt.Sprintf("%s (%s)", w.Reason, cs.Image)
			case "CrashLoopBackOff":
				if t := cs.LastTerminationState.Terminated; t != nil {
					return fmt.Sprintf("CrashLoopBackOff (container %s exited %d, %s)", cs.Name, t.ExitCode, t.Reason)
				}
				return fmt.Sprintf("CrashLoopBackOff (container %s)", cs.Name)
			default:
				if w.Message != "" {
					return fmt.Sprintf("%s (container %s: %s)", w.Reason, cs.Name, w.Message)
				}
				return fmt.Sprintf("%s (container %s)", w.Reason, cs.Name)
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			if c.Message != "" {
				return "not scheduled: " + c.Message
			}
			return "not scheduled: " + c.Reason
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			if hasReadinessProbe(p, cs.Name) {
				return fmt.Sprintf("container %s running, readiness probe failing", cs.Name)
			}
			return fmt.Sprintf("container %s running, not ready", cs.Name)
		}
	}
	if p.Status.Phase == corev1.PodRunning || p.Status.Phase == "" {
		return ""
	}
	return string(p.Status.Phase)
}

func hasReadinessProbe(p *corev1.Pod, container string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.ReadinessProbe != nil
		}
	}
	return false
}

// PodSummary is what [DescribePods] reads of one Pod, as a string: two
// Pods with equal summaries are described alike, so a watch of Pods need
// only wake a release when a summary changes.
func PodSummary(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "deleting"
	}
	if podReady(p) {
		return "ready"
	}
	var b strings.Builder
	b.WriteString(string(p.Status.Phase))
	b.WriteByte(0)
	b.WriteString(podProblem(p))
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			b.WriteByte(0)
			b.WriteString(v.PersistentVolumeClaim.ClaimName)
		}
	}
	return b.String()
}
