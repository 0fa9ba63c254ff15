package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and the finalizer the CronScaler controller puts on a
// CronScaler.
const (
	// OriginalReplicasAnnotation records the target's replica count (for a
	// HorizontalPodAutoscaler: its minReplicas) from before this CronScaler
	// first changed it. restoreOnDelete puts it back.
	OriginalReplicasAnnotation = "autoscaling.acme.com/original-replicas"
	// OriginalMaxReplicasAnnotation records a HorizontalPodAutoscaler's
	// maxReplicas from before this CronScaler first raised it.
	OriginalMaxReplicasAnnotation = "autoscaling.acme.com/original-max-replicas"
	// RestoreFinalizer holds deletion of a CronScaler with restoreOnDelete
	// until the target's original replica count is back.
	RestoreFinalizer = "autoscaling.acme.com/restore-replicas"
)

// ScaleTargetRef names the object whose replica count a CronScaler sets: a
// Deployment, StatefulSet, ReplicaSet, a custom resource with a /scale
// subresource, or a HorizontalPodAutoscaler (whose minReplicas is set).
type ScaleTargetRef struct {
	// APIVersion of the target, e.g. apps/v1 or autoscaling/v2.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$`
	APIVersion string `json:"apiVersion"`
	// Kind of the target, e.g. Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`
	// Name of the target, in the CronScaler's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
}

// ScheduleJob is one entry of a CronScaler's rhythm: from each time the
// schedule fires until another job fires, the target has Replicas replicas.
type ScheduleJob struct {
	// Name of the job, unique within the CronScaler; shown as the active job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Schedule in 5-field cron syntax (minute hour day-of-month month
	// day-of-week, e.g. "0 8 * * 1-5") or one of @yearly, @annually,
	// @monthly, @weekly, @daily, @midnight, @hourly; evaluated in timeZone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*?,/-]+( +[0-9A-Za-z*?,/-]+){4})$`
	Schedule string `json:"schedule"`
	// Replicas the target has while this job is the most recent to have
	// fired. For a HorizontalPodAutoscaler target this is its minReplicas.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas int32 `json:"replicas"`
}

// CronScalerSpec is the rhythm a CronScaler enforces on its target.
type CronScalerSpec struct {
	// ScaleTargetRef is the object to scale, in the CronScaler's namespace.
	// +required
	ScaleTargetRef ScaleTargetRef `json:"scaleTargetRef"`

	// TimeZone is the IANA time zone the schedules and excludeDates are read
	// in, e.g. Europe/Berlin.
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="timeZone must name an IANA zone, not Local"
	TimeZone string `json:"timeZone,omitempty"`

	// Jobs are the schedules and their replica counts. At any time the job
	// whose most recent fire time is the latest decides the count.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	Jobs []ScheduleJob `json:"jobs"`

	// Suspend stops the CronScaler from changing the target; the target keeps
	// the count it has. Unsuspending applies the current job at once.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ExcludeDates are calendar dates (YYYY-MM-DD, in timeZone) on which no
	// job fires, e.g. public holidays. A job that would fire on such a date
	// does not; the job active before it stays active.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=400
	// +kubebuilder:validation:items:Format=date
	// +kubebuilder:validation:items:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	ExcludeDates []string `json:"excludeDates,omitempty"`

	// RestoreOnDelete puts the target back to the replica count it had
	// before this CronScaler first changed it when the CronScaler is
	// deleted.
	// +optional
	RestoreOnDelete bool `json:"restoreOnDelete,omitempty"`
}

// JobStatus is what the controller computed for one job.
type JobStatus struct {
	// Name of the job.
	Name string `json:"name"`
	// LastScheduleTime is the job's most recent fire time, if it fired within
	// the look-back window (5 years).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is the job's next fire time.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
}

// CronScalerStatus is the observed state of a CronScaler.
type CronScalerStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready tells whether the target has the count of the active
	// job (or why not).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ActiveJob is the job whose most recent fire time is the latest.
	// +optional
	ActiveJob string `json:"activeJob,omitempty"`

	// DesiredReplicas is the active job's replica count.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`

	// AppliedScheduleTime is the fire time of the job whose count was last
	// applied to the target.
	// +optional
	AppliedScheduleTime *metav1.Time `json:"appliedScheduleTime,omitempty"`

	// LastScaleTime is when the controller last changed the target's count.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`

	// NextScheduleTime is the earliest next fire time over all jobs.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// Jobs are the last and next fire times of each job.
	// +optional
	// +listType=map
	// +listMapKey=name
	Jobs []JobStatus `json:"jobs,omitempty"`
}

// CronScaler sets the replica count of a workload on a schedule: scale up
// before business hours, down at night, to zero at weekends. It owns the
// target's count the way a HorizontalPodAutoscaler does: a count changed by
// hand is put back to the active job's.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cs,categories=acme
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.scaleTargetRef.name`,description="Name of the scaled object."
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.scaleTargetRef.kind`,priority=1,description="Kind of the scaled object."
// +kubebuilder:printcolumn:name="Active job",type=string,JSONPath=`.status.activeJob`,description="Job whose schedule fired most recently."
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.desiredReplicas`,description="Replica count of the active job."
// +kubebuilder:printcolumn:name="Next fire",type=string,JSONPath=`.status.nextScheduleTime`,description="Next time a job fires."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the target has the active job's count."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CronScaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CronScalerSpec `json:"spec"`
	// +optional
	Status CronScalerStatus `json:"status,omitempty"`
}

// CronScalerList is a list of CronScalers.
//
// +kubebuilder:object:root=true
type CronScalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronScaler `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CronScaler{}, &CronScalerList{})
}
