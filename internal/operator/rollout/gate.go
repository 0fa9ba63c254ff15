package rollout

import "sync"

// Gate tells the action path whether a release may move to the kind's
// default chart version. The rollout controller opens it wave by wave;
// until the controller's first pass, and while a rollout is halted or
// paused, a release that runs another version keeps it.
type Gate struct {
	mu       sync.RWMutex
	all      bool
	admitted map[string]bool
}

// Admits reports whether the release of key may move.
func (g *Gate) Admits(key string) bool {
	if g == nil {
		return true
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.all || g.admitted[key]
}

// AdmitAll lets every release move: no rollout runs, or it is complete.
func (g *Gate) AdmitAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.all, g.admitted = true, nil
}

// Admit lets exactly keys move; it returns the keys it admits that it did
// not before.
func (g *Gate) Admit(keys []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := make(map[string]bool, len(keys))
	var added []string
	for _, k := range keys {
		next[k] = true
		if !g.all && !g.admitted[k] {
			added = append(added, k)
		}
	}
	g.all, g.admitted = false, next
	return added
}

// Key names a resource in the gate: namespace/name, or name for a
// cluster-scoped kind.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
