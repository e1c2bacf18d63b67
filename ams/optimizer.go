package ams

import "github.com/xdlgo/xps/model/optim"

// The tables' update rules are package model/optim's (a leaf that the
// SLIDE layer shares without importing the table core); these names keep
// them where a table's user looks for them.
type (
	Optimizer = optim.Optimizer
	SGD       = optim.SGD
	Adagrad   = optim.Adagrad
	Adam      = optim.Adam
	FTRL      = optim.FTRL
	Momentum  = optim.Momentum
)
