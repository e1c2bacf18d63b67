// Command hdfsput copies local files to HDFS, as `hdfs dfs -put` does: each
// file is written under a temporary name and renamed when complete. It is
// how the README's HDFS example puts generated data on the test server
// (cmd/hdfsd); it works against any HDFS namenode that accepts simple
// authentication.
//
// Usage:
//
//	hdfsput [-f] [-user NAME] FILE... hdfs://HOST:PORT/DIR/
//	hdfsput [-f] [-user NAME] FILE hdfs://HOST:PORT/PATH
//
// A destination ending in '/' is a directory: each file keeps its base
// name there. Otherwise there must be exactly one file, copied to that
// path. Missing directories are created.
//
// Flags:
//
//	-f     overwrite existing files
//	-user  HDFS user (default $HADOOP_USER_NAME, else the OS user)
package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

func main() {
	force := flag.Bool("f", false, "overwrite existing files")
	user := flag.String("user", "", "HDFS user (default $HADOOP_USER_NAME, else the OS user)")
	flag.Usage = cli.Usage(flag.CommandLine, "hdfsput", "FILE... hdfs://HOST:PORT/DIR/")
	flag.Parse()
	if err := run(flag.Args(), *user, *force); err != nil {
		cli.Fatal("hdfsput", err)
	}
}

func run(args []string, user string, force bool) error {
	if len(args) < 2 {
		return fmt.Errorf("want local files and an hdfs:// destination (see -help)")
	}
	files, dest := args[:len(args)-1], args[len(args)-1]
	u, err := hdfsconn.ParseURI(dest)
	if err != nil {
		return err
	}
	dir := strings.HasSuffix(dest, "/")
	if !dir && len(files) > 1 {
		return fmt.Errorf("%d files to %s: end the destination with / to copy into a directory", len(files), dest)
	}
	c, _, err := hdfsconn.Dial(u.Addr, user)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, f := range files {
		dst := u.Path
		if dir {
			dst = path.Join(u.Path, filepath.Base(f))
		}
		n, err := hdfsconn.Put(c, f, dst, force)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "hdfsput: %s -> %s (%d bytes)\n", f, hdfsconn.FormatURI(u.Addr, dst), n)
	}
	return nil
}
