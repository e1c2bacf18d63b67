package config

import (
	"bufio"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultShuffleWindow is the default of train.shuffle_window: 256 MiB.
const DefaultShuffleWindow = 256 << 20

// defaultMemoryLimit is the default of train.memory_limit: half of the
// machine's memory (MemTotal of /proc/meminfo), or of GOMEMLIMIT when
// that is set and lower; 8 GiB where neither is known.
func defaultMemoryLimit() int64 {
	total := int64(16 << 30)
	if n, ok := memTotal(); ok {
		total = n
	}
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 && l < total {
		total = l
	}
	return total / 2
}

// memTotal reads the machine's memory from /proc/meminfo.
func memTotal() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb << 10, err == nil && kb > 0
	}
	return 0, false
}
