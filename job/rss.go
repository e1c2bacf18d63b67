package job

import "syscall"

// peakRSS returns the process's peak resident set in bytes (0 when the
// system does not say).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux counts kilobytes
}
