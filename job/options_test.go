package job

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/config"
)

// TestBuiltConfigIsTakenAsItIs: Run builds the Config of a job once. One
// that config.Build made (a command's main builds it from the file and the
// flags) is taken as it is, not defaulted and validated again: changed
// after Build, even to a value Validate refuses, it stays as it is. One
// made in Go gets its defaults and its validation here.
func TestBuiltConfigIsTakenAsItIs(t *testing.T) {
	etcd := new(clientv3.Client) // not dialled: withDefaults only checks there is one
	built, err := config.Build(config.YAML([]byte("train: {epochs: 2}\n")))
	if err != nil {
		t.Fatal(err)
	}
	built.Train.BatchSize = -1
	o, err := Options{Config: built, Etcd: etcd}.withDefaults()
	if err != nil || o.Config.Train.BatchSize != -1 {
		t.Errorf("a built Config: %v, batch size %d; want it taken as it is (-1), not validated again", err, o.Config.Train.BatchSize)
	}
	var g config.Config
	g.Train.Epochs = 2
	o, err = Options{Config: g, Etcd: etcd}.withDefaults()
	if err != nil || !o.Config.Built() || o.Config.Train.BatchSize != 256 || o.Config.Train.Epochs != 2 {
		t.Errorf("a Config made in Go: %v, built %v, batch size %d, epochs %d; want it built with its defaults",
			err, o.Config.Built(), o.Config.Train.BatchSize, o.Config.Train.Epochs)
	}
	g.Train.BatchSize = -1
	if _, err := (Options{Config: g, Etcd: etcd}).withDefaults(); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("a Config made in Go with batch size -1: %v, want it refused (config.ErrInvalid)", err)
	}
}
