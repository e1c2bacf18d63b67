package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestFaultInjectionKafka is TestFaultInjection over a Kafka topic: a
// kafkad broker process (not under fault) serves topic ctr with 4
// partitions, into which kafkaput writes the generated training file once
// per epoch before the job starts; the scheduler deals the partitions to
// the live workers (the two trainers, then the gate worker too, anew when
// it joins), which read them in bounded mode (up to the end offsets, then
// evaluate and end) with their positions kept in the model. The
// checks are those of the files variant: the final model's history holds
// every message once (epochs x samples), and the test AUC is within 0.01
// of the same job over the same topic without faults. The same XPS_FAULT_*
// settings apply.
func TestFaultInjectionKafka(t *testing.T) {
	var kafkaAddr string // the broker's, once started
	faultTest(t, faultSource{
		name:  "kafka",
		train: "shuffle: false",
		// A topic is read once, from the positions in the model: the
		// epochs are in the topic.
		epochs: func(int64) int64 { return 1 },
		start: func(t *testing.T, env faultEnv) faultData {
			kd := start(t, "kafkad", filepath.Join(env.bin, "kafkad"), "-port", "0", "-topics", "ctr:4")
			var addr string
			defer func() { kafkaAddr = addr }()
			testutil.Eventually(t, 30*time.Second, "kafkad's address line", func() bool {
				_, err := fmt.Sscanf(kd.output(), "kafkad serving on %s", &addr)
				return err == nil
			})
			for i := range env.epochs {
				start(t, fmt.Sprintf("kafkaput#%d", i+1), filepath.Join(env.bin, "kafkaput"),
					"-brokers", addr, "-topic", "ctr", env.train).wait(t, 5*time.Minute)
			}
			data := []string{"-kafka", addr, "-topic", "ctr"}
			return faultData{sched: data, worker: data}
		},
		digest: func(t *testing.T, env faultEnv) uint64 {
			// The topic read whole, as the job reads it (the epochs are
			// in it): its positions are what the checkpoints sum.
			src, err := kafkasrc.Open(context.Background(), kafkasrc.Options{Brokers: []string{kafkaAddr}, Topic: "ctr", Format: reader.LibFFM})
			return sourceDigest(t, src, err)
		},
	})
}
