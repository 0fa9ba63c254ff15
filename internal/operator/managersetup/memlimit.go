package managersetup

import (
	"os"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
)

// MemoryLimitEnv names the variable that carries the container's memory
// limit in bytes: config/manager sets it with a resourceFieldRef to
// limits.memory.
const MemoryLimitEnv = "MEMORY_LIMIT"

// memoryLimitShare is the part of the container's limit that Go's soft
// memory limit gets: the rest is headroom for memory the Go runtime does
// not count and for the moment between the limit being reached and the
// collector catching up, so that a heap that grows towards the limit makes
// the collector work harder instead of the kernel killing the process.
const memoryLimitShare = 0.9

// SetMemoryLimit sets Go's soft memory limit (GOMEMLIMIT) to 90% of the
// container's memory limit found in MEMORY_LIMIT, unless GOMEMLIMIT is set
// (the Go runtime has applied it already) or MEMORY_LIMIT is not a positive
// number of bytes. It returns the limit in effect, math.MaxInt64 for none.
func SetMemoryLimit(log logr.Logger, getenv func(string) string) int64 {
	if v := getenv("GOMEMLIMIT"); v != "" {
		limit := debug.SetMemoryLimit(-1)
		log.Info("Go memory limit from GOMEMLIMIT", "GOMEMLIMIT", v, "bytes", limit)
		return limit
	}
	v := getenv(MemoryLimitEnv)
	if v == "" {
		return debug.SetMemoryLimit(-1)
	}
	container, err := strconv.ParseInt(v, 10, 64)
	if err != nil || container <= 0 {
		log.Info("Ignoring "+MemoryLimitEnv+": not a positive number of bytes", MemoryLimitEnv, v)
		return debug.SetMemoryLimit(-1)
	}
	limit := int64(float64(container) * memoryLimitShare)
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set to 90% of the container's", "containerLimitBytes", container, "goMemoryLimitBytes", limit)
	return limit
}

// SetMemoryLimitFromEnv is SetMemoryLimit with the process's environment.
func SetMemoryLimitFromEnv(log logr.Logger) int64 { return SetMemoryLimit(log, os.Getenv) }
