package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// addrs parses the line hdfsd prints.
func addrs(t *testing.T, line string) (namenode, datanode string) {
	t.Helper()
	if _, err := fmt.Sscanf(line, "hdfsd: namenode %s datanode %s", &namenode, &datanode); err != nil {
		t.Fatalf("address line %q: %v", line, err)
	}
	return namenode, datanode
}

// roundTrip writes a multi-block file through the server and reads it back.
func roundTrip(t *testing.T, namenode string) {
	t.Helper()
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{namenode}, User: "test"})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer c.Close()
	if err := c.MkdirAll("/data/x", 0o755); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	data := make([]byte, 300_000)
	rand.New(rand.NewSource(1)).Read(data)
	w, err := c.Create("/data/x/file")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got, err := c.ReadFile("/data/x/file")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	d, err := c.ServerDefaults()
	if err != nil || d.BlockSize != 64<<10 {
		t.Errorf("ServerDefaults = %+v, %v; want 64 KiB blocks", d, err)
	}
}

func TestRunInProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-block-size", "65536"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address line: %v (stderr: %s)", err, stderr.String())
	}
	nn, _ := addrs(t, line)
	roundTrip(t, nn)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestRunFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error or on stderr
	}{
		{[]string{"-h"}, "-block-size"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-addr", "127.0.0.1:0", "-block-size", "1000"}, "BlockSize 1000"},
		{[]string{"-addr", "nonsense"}, "Addr"},
		{[]string{"-addr", "127.0.0.1:0", "extra"}, `unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tc.args, io.Discard, &stderr)
		if err == nil {
			t.Errorf("run(%q) succeeded", tc.args)
			continue
		}
		if tc.args[0] == "-h" && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("run(-h) = %v, want flag.ErrHelp", err)
		}
		if !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("run(%q) = %v, stderr %q; want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

// TestSubprocess builds hdfsd, runs it, talks HDFS to it and stops it with
// SIGTERM.
func TestSubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "hdfsd")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-block-size", "65536", "-v")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		exited <- cmd.Wait()
	}()
	defer func() {
		cmd.Process.Kill() // no-op once it has exited
	}()

	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("no address line; stderr: %s", stderr.String())
	}
	nn, dn := addrs(t, line)
	if !strings.HasPrefix(dn, "127.0.0.1:") {
		t.Errorf("datanode address %q", dn)
	}
	roundTrip(t, nn)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("hdfsd exited with %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hdfsd did not stop on SIGTERM; stderr: %s", stderr.String())
	}
}
