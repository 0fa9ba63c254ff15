package localcluster

import "testing"

func TestWithoutChains(t *testing.T) {
	save := `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:CNI-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
:LOCALCLUSTER-FORWARD - [0:0]
:OTHER - [0:0]
-A FORWARD -j LOCALCLUSTER-FORWARD
-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
-A FORWARD -j OTHER
-A CNI-FORWARD -j ACCEPT
-A KUBE-SERVICES -d 10.96.0.1/32 -j REJECT
-A OTHER -g KUBE-SERVICES
-A OTHER -s 10.0.0.0/8 -j ACCEPT
COMMIT
`
	want := `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OTHER - [0:0]
-A FORWARD -j OTHER
-A OTHER -s 10.0.0.0/8 -j ACCEPT
COMMIT
`
	got, changed := withoutChains(save, []string{"KUBE-", "CNI-", "LOCALCLUSTER-"})
	if !changed {
		t.Error("changed = false")
	}
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, changed := withoutChains(want, []string{"KUBE-", "CNI-", "LOCALCLUSTER-"}); changed {
		t.Error("a ruleset without our chains is changed")
	}
}
