package worker

import "github.com/xdlgo/xps/job"

// ErrRestored is returned (wrapped) by a worker's pause when training
// resumes at a higher cluster version: the model was rolled back to a
// snapshot meanwhile, and the worker starts over from the reader
// positions the restored model holds. It is job.ErrRestored.
var ErrRestored = job.ErrRestored
