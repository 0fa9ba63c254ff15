package main

import (
	"fmt"
	"strings"
	"time"
)

// Result is what one runtime did with N resources.
type Result struct {
	Runtime string `json:"runtime"`
	N       int    `json:"n"`
	// AllDeployed is the time from the first create to the last resource
	// reporting Deployed; 0 when not all did (see Deployed).
	AllDeployed time.Duration `json:"allDeployed"`
	Deployed    int           `json:"deployed"`
	// LatencyP50 and LatencyP99: per resource, its create call to Deployed.
	LatencyP50 time.Duration `json:"latencyP50"`
	LatencyP99 time.Duration `json:"latencyP99"`
	// Idle window figures.
	IdleWindow      time.Duration `json:"idleWindow"`
	IdleCPUCores    float64       `json:"idleCPUCores"`
	APIRequestsPerM float64       `json:"apiRequestsPerMinute"`
	// PeakRSSMiB is VmHWM at the end of the run.
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// Drift: deleted child Deployments and their recreation.
	DriftDeleted   int           `json:"driftDeleted"`
	DriftRecreated int           `json:"driftRecreated"`
	DriftP50       time.Duration `json:"driftP50"`
	DriftMax       time.Duration `json:"driftMax"`
	// Hand edits: the image of other child Deployments changed by hand, and
	// the time until the chart's image is back.
	EditedChildren  int           `json:"editedChildren"`
	EditsReverted   int           `json:"editsReverted"`
	EditRevertedP50 time.Duration `json:"editRevertedP50"`
	EditRevertedMax time.Duration `json:"editRevertedMax"`
	// Upgrade: every spec edited at once, until every release is deployed
	// at a new revision.
	AllUpgraded time.Duration `json:"allUpgraded"`
	Upgraded    int           `json:"upgraded"`
	// FailedReleases counts the releases with a revision Helm recorded as
	// failed (any phase).
	FailedReleases int `json:"failedReleases"`
	// RequestsPerInstall is the runtime's API requests from the first
	// create until all were Deployed, per resource; for the floor, the
	// objects each release creates (the least any tool sends).
	RequestsPerInstall float64 `json:"requestsPerInstall"`
	// RequestsPerUpgrade is the runtime's API requests from the first spec
	// edit until all were upgraded, per resource; 0 when not all were
	// (and for the floor, which counts no requests).
	RequestsPerUpgrade float64 `json:"requestsPerUpgrade"`
	// Ready (runtimes that write it): from a resource's Deployment rolling
	// out (or its Deployed, when later) to Ready=True, over the resources
	// seen both ways; and from the deletion of a child Deployment to
	// Ready=False.
	AllReady         time.Duration `json:"allReady,omitempty"`
	ReadyMeasured    int           `json:"readyMeasured,omitempty"`
	ReadyLagP50      time.Duration `json:"readyLagP50,omitempty"`
	ReadyLagP99      time.Duration `json:"readyLagP99,omitempty"`
	ReadyLagMax      time.Duration `json:"readyLagMax,omitempty"`
	NotReadyMeasured int           `json:"notReadyMeasured,omitempty"`
	NotReadyLagP50   time.Duration `json:"notReadyLagP50,omitempty"`
	NotReadyLagMax   time.Duration `json:"notReadyLagMax,omitempty"`
	// TotalCPU is the runtime's CPU seconds over the whole run.
	TotalCPU float64 `json:"totalCPUSeconds"`
}

// row is one line of the table: a label and how to read a Result.
type row struct {
	label string
	value func(Result) (float64, bool) // false: not measured / incomplete
	unit  func(float64) string
}

func seconds(d time.Duration, ok bool) (float64, bool) { return d.Seconds(), ok }

var rows = []row{
	{"all Deployed after", func(r Result) (float64, bool) { return seconds(r.AllDeployed, r.Deployed == r.N) }, fmtSeconds},
	{"API requests per install", func(r Result) (float64, bool) { return r.RequestsPerInstall, r.RequestsPerInstall > 0 }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	{"p50 create->Deployed", func(r Result) (float64, bool) { return seconds(r.LatencyP50, r.Deployed > 0) }, fmtSeconds},
	{"p99 create->Deployed", func(r Result) (float64, bool) { return seconds(r.LatencyP99, r.Deployed > 0) }, fmtSeconds},
	{"idle CPU (cores)", func(r Result) (float64, bool) { return r.IdleCPUCores, r.IdleWindow > 0 }, func(v float64) string { return fmt.Sprintf("%.4f", v) }},
	{"idle API requests/min", func(r Result) (float64, bool) { return r.APIRequestsPerM, r.IdleWindow > 0 }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	{"peak RSS (MiB)", func(r Result) (float64, bool) { return r.PeakRSSMiB, r.PeakRSSMiB > 0 }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	{"deleted child back p50", func(r Result) (float64, bool) { return seconds(r.DriftP50, r.DriftRecreated > 0) }, fmtSeconds},
	{"deleted child back max", func(r Result) (float64, bool) {
		return seconds(r.DriftMax, r.DriftRecreated == r.DriftDeleted && r.DriftDeleted > 0)
	}, fmtSeconds},
	{"edited child back p50", func(r Result) (float64, bool) { return seconds(r.EditRevertedP50, r.EditsReverted > 0) }, fmtSeconds},
	{"edited child back max", func(r Result) (float64, bool) {
		return seconds(r.EditRevertedMax, r.EditsReverted == r.EditedChildren && r.EditedChildren > 0)
	}, fmtSeconds},
	{"all upgraded after edit", func(r Result) (float64, bool) { return seconds(r.AllUpgraded, r.Upgraded == r.N) }, fmtSeconds},
	{"API requests per upgrade", func(r Result) (float64, bool) { return r.RequestsPerUpgrade, r.RequestsPerUpgrade > 0 }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	{"failed releases", func(r Result) (float64, bool) {
		return float64(r.FailedReleases), r.Upgraded > 0 && r.Runtime != "floor"
	}, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	{"all Ready after", func(r Result) (float64, bool) { return seconds(r.AllReady, r.AllReady > 0) }, fmtSeconds},
	{"Ready after rollout p50", func(r Result) (float64, bool) { return seconds(r.ReadyLagP50, r.ReadyMeasured > 0) }, fmtSeconds},
	{"Ready after rollout p99", func(r Result) (float64, bool) { return seconds(r.ReadyLagP99, r.ReadyMeasured > 0) }, fmtSeconds},
	{"Ready after rollout max", func(r Result) (float64, bool) { return seconds(r.ReadyLagMax, r.ReadyMeasured > 0) }, fmtSeconds},
	{"not Ready after child deleted max", func(r Result) (float64, bool) {
		return seconds(r.NotReadyLagMax, r.NotReadyMeasured > 0 && r.NotReadyMeasured == r.DriftDeleted)
	}, fmtSeconds},
	{"CPU over the run (s)", func(r Result) (float64, bool) { return r.TotalCPU, r.TotalCPU > 0 }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
}

func fmtSeconds(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2fs", v)
	}
	return fmt.Sprintf("%.1fs", v)
}

// FormatTable renders the results of one N as a Markdown table: a column
// per runtime with absolute figures, then one ratio column ours/peer per
// peer (below 1 is better for ours, on every row). ours names the runtime
// the ratios are about.
func FormatTable(results []Result, ours string) string {
	var peers []Result
	var our *Result
	for i := range results {
		if results[i].Runtime == ours {
			our = &results[i]
		} else {
			peers = append(peers, results[i])
		}
	}
	header := []string{"N=" + fmt.Sprint(firstN(results))}
	for _, r := range results {
		header = append(header, r.Runtime)
	}
	if our != nil {
		for _, p := range peers {
			header = append(header, ours+"/"+p.Runtime)
		}
	}
	var lines [][]string
	for _, rw := range rows {
		line := []string{rw.label}
		for _, r := range results {
			v, ok := rw.value(r)
			cell := rw.unit(v)
			if !ok {
				cell = incomplete(rw.label, r, cell)
			}
			line = append(line, cell)
		}
		if our != nil {
			ov, ook := rw.value(*our)
			for _, p := range peers {
				pv, pok := rw.value(p)
				line = append(line, ratio(ov, ook, pv, pok))
			}
		}
		lines = append(lines, line)
	}
	return markdown(header, lines)
}

// incomplete marks a figure that is not a complete measurement.
func incomplete(label string, r Result, cell string) string {
	switch {
	case strings.HasPrefix(label, "all Deployed"):
		return fmt.Sprintf("%d/%d only", r.Deployed, r.N)
	case strings.HasPrefix(label, "all upgraded"):
		return fmt.Sprintf("%d/%d only", r.Upgraded, r.N)
	case strings.HasPrefix(label, "deleted child back max") && r.DriftDeleted > 0:
		return fmt.Sprintf("%d/%d back", r.DriftRecreated, r.DriftDeleted)
	case strings.HasPrefix(label, "edited child back max") && r.EditedChildren > 0:
		return fmt.Sprintf("%d/%d back", r.EditsReverted, r.EditedChildren)
	}
	return "-"
}

// ratio formats ours/peer; "-" when either is missing or the peer's is 0.
func ratio(ours float64, oursOK bool, peer float64, peerOK bool) string {
	if !oursOK || !peerOK || peer == 0 {
		return "-"
	}
	r := ours / peer
	switch {
	case r >= 0.1:
		return fmt.Sprintf("%.2fx", r)
	case r >= 0.001:
		return fmt.Sprintf("%.3fx", r)
	case r > 0:
		return "<0.001x"
	default:
		return "0x"
	}
}

func firstN(results []Result) int {
	if len(results) == 0 {
		return 0
	}
	return results[0].N
}

// markdown renders a table with padded columns.
func markdown(header []string, lines [][]string) string {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	write := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			if i == 0 {
				fmt.Fprintf(&b, " %-*s |", widths[i], c)
			} else {
				fmt.Fprintf(&b, " %*s |", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	write(header)
	b.WriteString("|")
	for i, w := range widths {
		if i == 0 {
			b.WriteString(" " + strings.Repeat("-", w) + " |")
		} else {
			b.WriteString(" " + strings.Repeat("-", w-1) + ": |")
		}
	}
	b.WriteString("\n")
	for _, l := range lines {
		write(l)
	}
	return b.String()
}
