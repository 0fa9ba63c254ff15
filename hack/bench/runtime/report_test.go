package main

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestFormatTable(t *testing.T) {
	g := NewWithT(t)
	results := []Result{{
		Runtime: "ours", N: 200, Deployed: 200, AllDeployed: 5 * time.Second, LatencyP50: 2 * time.Second, LatencyP99: 4 * time.Second,
		IdleWindow: time.Minute, IdleCPUCores: 0.001, APIRequestsPerM: 0, PeakRSSMiB: 100,
		DriftDeleted: 20, DriftRecreated: 20, DriftP50: 200 * time.Millisecond, DriftMax: 400 * time.Millisecond,
		EditedChildren: 20, EditsReverted: 20, EditRevertedP50: 300 * time.Millisecond, EditRevertedMax: 500 * time.Millisecond,
		Upgraded: 200, AllUpgraded: 20 * time.Second, TotalCPU: 30,
	}, {
		Runtime: "peer", N: 200, Deployed: 190, AllDeployed: 0, LatencyP50: 4 * time.Second, LatencyP99: 8 * time.Second,
		IdleWindow: time.Minute, IdleCPUCores: 0.5, APIRequestsPerM: 1200, PeakRSSMiB: 200,
		DriftDeleted: 20, DriftRecreated: 19, DriftP50: 40 * time.Second, DriftMax: 50 * time.Second,
		EditedChildren: 20, EditsReverted: 18, EditRevertedP50: 30 * time.Second, EditRevertedMax: 45 * time.Second,
		Upgraded: 200, AllUpgraded: 40 * time.Second, TotalCPU: 120,
	}}
	table := FormatTable(results, "ours")
	t.Log("\n" + table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	g.Expect(lines).To(HaveLen(2 + len(rows)))
	cells := func(line string) []string {
		var out []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	// The header names N, the runtimes and the ratio column.
	g.Expect(cells(lines[0])).To(Equal([]string{"N=200", "ours", "peer", "ours/peer"}))
	// Columns are right-aligned except the first.
	g.Expect(lines[1]).To(HavePrefix("| ---"))
	g.Expect(lines[1]).To(HaveSuffix(": |"))
	row := func(label string) []string {
		for _, l := range lines[2:] {
			if c := cells(l); c[0] == label {
				return c
			}
		}
		t.Fatalf("no row %q", label)
		return nil
	}
	cases := []struct {
		label string
		want  []string
	}{
		// An incomplete phase shows how far it got, and no ratio.
		{"all Deployed after", []string{"all Deployed after", "5.00s", "190/200 only", "-"}},
		{"p50 create->Deployed", []string{"p50 create->Deployed", "2.00s", "4.00s", "0.50x"}},
		{"CPU over the run (s)", []string{"CPU over the run (s)", "30.0", "120.0", "0.25x"}},
		// Small ratios keep three decimals; below that, a bound.
		{"idle CPU (cores)", []string{"idle CPU (cores)", "0.0010", "0.5000", "0.002x"}},
		{"idle API requests/min", []string{"idle API requests/min", "0", "1200", "0x"}},
		{"deleted child back p50", []string{"deleted child back p50", "0.20s", "40.0s", "0.005x"}},
		{"deleted child back max", []string{"deleted child back max", "0.40s", "19/20 back", "-"}},
		{"edited child back p50", []string{"edited child back p50", "0.30s", "30.0s", "0.010x"}},
		{"edited child back max", []string{"edited child back max", "0.50s", "18/20 back", "-"}},
		{"all upgraded after edit", []string{"all upgraded after edit", "20.0s", "40.0s", "0.50x"}},
		{"peak RSS (MiB)", []string{"peak RSS (MiB)", "100", "200", "0.50x"}},
	}
	for _, tc := range cases {
		g.Expect(row(tc.label)).To(Equal(tc.want), tc.label)
	}
}

func TestSeriesOf(t *testing.T) {
	results := []Result{
		{Runtime: "ours", N: 500, Deployed: 500, AllDeployed: 20 * time.Second},
		{Runtime: "peer", N: 500, Deployed: 400}, // incomplete: left out
		{Runtime: "ours", N: 100, Deployed: 100, AllDeployed: 4 * time.Second},
		{Runtime: "peer", N: 100, Deployed: 100, AllDeployed: 9 * time.Second},
	}
	NewWithT(t).Expect(seriesOf(results)).To(Equal([]series{
		{name: "ours", points: [][2]float64{{100, 4}, {500, 20}}},
		{name: "peer", points: [][2]float64{{100, 9}}},
	}))
}

func TestRatio(t *testing.T) {
	cases := []struct {
		name           string
		ours, peer     float64
		oursOK, peerOK bool
		want           string
	}{
		{name: "two decimals from 0.1 up", ours: 3, peer: 2, oursOK: true, peerOK: true, want: "1.50x"},
		{name: "three decimals below 0.1", ours: 1, peer: 40, oursOK: true, peerOK: true, want: "0.025x"},
		{name: "a bound below 0.001", ours: 0.0007, peer: 0.8787, oursOK: true, peerOK: true, want: "<0.001x"},
		{name: "zero", ours: 0, peer: 3414, oursOK: true, peerOK: true, want: "0x"},
		{name: "the peer's figure is zero", ours: 1, peer: 0, oursOK: true, peerOK: true, want: "-"},
		{name: "ours incomplete", ours: 1, peer: 2, oursOK: false, peerOK: true, want: "-"},
		{name: "the peer's incomplete", ours: 1, peer: 2, oursOK: true, peerOK: false, want: "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(ratio(tc.ours, tc.oursOK, tc.peer, tc.peerOK)).To(Equal(tc.want))
		})
	}
}
