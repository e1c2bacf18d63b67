package hdfstest

import (
	"errors"
	"fmt"
	"io/fs"
)

// Java exception class names the server reports in RpcResponseHeaderProto.
// The client maps several of them onto os errors (see the hdfs package's
// error.go), so they must be spelled exactly as Hadoop spells them.
const (
	excFileNotFound        = "java.io.FileNotFoundException"
	excIO                  = "java.io.IOException"
	excFileAlreadyExists   = "org.apache.hadoop.fs.FileAlreadyExistsException"
	excParentNotDirectory  = "org.apache.hadoop.fs.ParentNotDirectoryException"
	excPathIsNotEmptyDir   = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"
	excInvalidPath         = "org.apache.hadoop.fs.InvalidPathException"
	excAlreadyBeingCreated = "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException"
	excLeaseExpired        = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException"
	excIllegalArgument     = "org.apache.hadoop.HadoopIllegalArgumentException"
	excNoSuchMethod        = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	excNoSuchProtocol      = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	excRPCServer           = "org.apache.hadoop.ipc.RpcServerException"
)

// ErrNotExist is returned (wrapped) by the Server's inspection helpers
// (Blocks, CorruptBlock) when a path or block does not exist. errors.Is
// matches it against fs.ErrNotExist too.
var ErrNotExist = fmt.Errorf("hdfstest: %w", fs.ErrNotExist)

// remoteError is an error reported to the client as a Java exception: class
// goes into exceptionClassName, msg into errorMsg.
type remoteError struct {
	class string
	msg   string
}

func (e *remoteError) Error() string { return e.class + ": " + e.msg }

func remoteErrorf(class, format string, args ...any) error {
	return &remoteError{class: class, msg: fmt.Sprintf(format, args...)}
}

// exceptionOf returns the Java class and message to report for err. Errors
// that are not remoteErrors are reported as java.io.IOException.
func exceptionOf(err error) (class, msg string) {
	var re *remoteError
	if errors.As(err, &re) {
		return re.class, re.msg
	}
	return excIO, err.Error()
}
