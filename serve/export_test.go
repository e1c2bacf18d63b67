package serve

// Places reports the places taken among the requests in flight: of the
// MaxInFlight, and of those kept for small requests. Tests wait on it to
// know that a request they hold has its place, instead of guessing.
func Places(s *Server) (general, small int) { return len(s.inFlight), len(s.small) }
