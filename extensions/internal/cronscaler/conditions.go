package cronscaler

// ConditionReady tells whether the target has the replica count of the
// active job. It is the only condition type of a CronScaler.
const ConditionReady = "Ready"

// Reasons of the Ready condition. Several double as Event reasons.
const (
	// ReasonScaled: the target has the active job's replica count.
	ReasonScaled = "Scaled"
	// ReasonWaiting: no job has fired yet (within the look-back), so the
	// CronScaler leaves the target alone until the first fire.
	ReasonWaiting = "WaitingForFirstFire"
	// ReasonSuspended: spec.suspend is set; the target is not touched.
	ReasonSuspended = "Suspended"
	// ReasonInvalidSpec: a schedule does not parse, the time zone is
	// unknown, or an excluded date is not a date. Fixed by editing the spec.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonTargetNotFound: the scaleTargetRef names no object.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetNotScalable: the target's kind is unknown or has no /scale
	// subresource.
	ReasonTargetNotScalable = "TargetNotScalable"
	// ReasonScaleFailed: reading or writing the target's count failed.
	ReasonScaleFailed = "ScaleFailed"
	// ReasonAmbiguousTarget: another CronScaler, older (or as old with a
	// smaller name), scales the same target; this one does not touch it.
	ReasonAmbiguousTarget = "AmbiguousTarget"
	// ReasonTargetManagedByHPA: a HorizontalPodAutoscaler scales the
	// target; the CronScaler should target the HPA instead.
	ReasonTargetManagedByHPA = "TargetManagedByHPA"
	// ReasonReplicasSetByChart: the target belongs to a Helm release whose
	// chart sets its count, so the release's drift repair would undo every
	// scale; the CronScaler does not touch it.
	ReasonReplicasSetByChart = "ReplicasSetByChart"
	// ReasonWaitingForRelease: the target belongs to a Helm release whose
	// custom resource has no manifest in its status yet, so whether the
	// chart sets the count is not known; looked at again shortly.
	ReasonWaitingForRelease = "WaitingForRelease"
	// ReasonRestoreFailed: restoreOnDelete could not put the original count
	// back; deletion waits and retries.
	ReasonRestoreFailed = "RestoreFailed"
)

// Event reasons that are not condition reasons.
const (
	// EventDriftCorrected: the target's count was changed outside the
	// CronScaler and has been put back.
	EventDriftCorrected = "DriftCorrected"
	// EventRestored: restoreOnDelete put the original count back.
	EventRestored = "Restored"
)
