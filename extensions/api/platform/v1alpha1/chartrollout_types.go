package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phases of a ChartRollout.
const (
	// PhaseProgressing: waves run.
	PhaseProgressing = "Progressing"
	// PhasePaused: spec.paused was set by hand; no wave starts.
	PhasePaused = "Paused"
	// PhaseHalted: a wave failed more releases than the policy tolerates;
	// no release moves until spec.paused is set to false.
	PhaseHalted = "Halted"
	// PhaseComplete: every release of the kind runs the version, or
	// failed within the tolerance.
	PhaseComplete = "Complete"
	// PhaseSuperseded: another version became the kind's default before
	// this rollout completed.
	PhaseSuperseded = "Superseded"
)

// Conditions of a ChartRollout, each with the phase as its reason and the
// status message as its message, for `kubectl wait` and for tools that
// read kstatus conditions.
const (
	// ConditionComplete is True once the phase is Complete.
	ConditionComplete = "Complete"
	// ConditionProgressing is True while waves run.
	ConditionProgressing = "Progressing"
	// ConditionStalled is True while the rollout is halted.
	ConditionStalled = "Stalled"
)

// ChartRolloutSpec names the kind and chart version; the operator writes
// it. A person sets paused.
type ChartRolloutSpec struct {
	// Group and Kind are the custom resource kind whose releases move.
	Group string `json:"group"`
	Kind  string `json:"kind"`
	// Version is the chart version they move to: the kind's default.
	Version string `json:"version"`
	// Shard is the shard selector of the operator that runs the rollout;
	// each shard moves its own resources.
	// +optional
	Shard string `json:"shard,omitempty"`
	// Paused stops the rollout before its next wave. The operator sets it
	// when it halts a rollout; setting it to false resumes: the failed
	// releases of the halted wave are tried again.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// WaveStatus is the progress of one wave.
type WaveStatus struct {
	// Wave is its number, from 1.
	Wave int32 `json:"wave"`
	// Releases is how many releases it moves, and Moved, Failed how many
	// of those are at the version and Ready, or failed.
	Releases int32 `json:"releases"`
	Moved    int32 `json:"moved"`
	Failed   int32 `json:"failed"`
	// StartedAt and FinishedAt bound it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// ChartRolloutStatus is the progress of the rollout.
type ChartRolloutStatus struct {
	// Phase is Progressing, Paused, Halted, Complete or Superseded.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Wave is the running (or last) wave, from 1, of Waves.
	// +optional
	Wave int32 `json:"wave,omitempty"`
	// +optional
	Waves int32 `json:"waves,omitempty"`
	// Releases counts the kind's resources the rollout moves (pinned ones
	// are not); Moved those at the version and Ready; Failed those that
	// failed at it in this attempt; Pinned those pinned to a version.
	// +optional
	Releases int32 `json:"releases"`
	// +optional
	Moved int32 `json:"moved"`
	// +optional
	Failed int32 `json:"failed"`
	// +optional
	Pinned int32 `json:"pinned"`
	// Attempt counts the starts of the rollout: 1, and one more at each
	// resume after a halt.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// AttemptStartedAt is when the current attempt began.
	// +optional
	AttemptStartedAt *metav1.Time `json:"attemptStartedAt,omitempty"`
	// History has a line for every wave of the current attempt.
	// +optional
	History []WaveStatus `json:"history,omitempty"`
	// Message says what the rollout waits for, or why it halted.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions say the phase as Complete, Progressing and Stalled
	// (halted), each observing the generation it was written for.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ChartRollout is the rollout of one chart version to the releases of
// one kind. The operator creates one when the kind's default chart
// version changes and some releases run another version.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=crol
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Wave",type=integer,JSONPath=`.status.wave`
// +kubebuilder:printcolumn:name="Waves",type=integer,JSONPath=`.status.waves`
// +kubebuilder:printcolumn:name="Moved",type=integer,JSONPath=`.status.moved`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Releases",type=integer,JSONPath=`.status.releases`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ChartRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChartRolloutSpec   `json:"spec,omitempty"`
	Status ChartRolloutStatus `json:"status,omitempty"`
}

// ChartRolloutList is a list of ChartRollouts.
//
// +kubebuilder:object:root=true
type ChartRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ChartRollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ChartRollout{}, &ChartRolloutList{})
}
