package amspb

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
)

// ErrorCode is one entry of the error table (Errors): a sentinel error,
// the gRPC status code a shard answers it with, and the reason that names
// it on the wire.
type ErrorCode struct {
	Err  error
	Code codes.Code
	// Reason names Err in the status: the Reason of a google.rpc.ErrorInfo
	// detail of domain ErrorDomain. It is Err's Go name in upper snake
	// case without the Err prefix (ErrStaleVersion: STALE_VERSION).
	Reason string
	// Bare: gRPC itself, not a shard, reports Err with Code and no reason
	// (the connection, the call's context), so a status with Code that
	// names no error of the table is Err.
	Bare bool
}

// ErrorDomain is the domain of the ErrorInfo details that name errors of
// the table.
const ErrorDomain = "xps.ams"

// Errors is the error table: every sentinel of the AMS packages, and the
// context's errors, with the status code and the reason that carry it
// over gRPC. ToStatus (the shard's server) and FromStatus (the client)
// both use it, so that errors.Is matches the same sentinels on either
// side of a call. Order matters where an error matches several entries:
// the first one's code is the status's code, so more specific entries
// come first (ErrClosed before ErrUnavailable, which it wraps, and
// ErrTooLarge and ErrNonFinite before ErrBadRequest).
var Errors = [...]ErrorCode{
	{Err: ams.ErrStaleVersion, Code: codes.Aborted, Reason: "STALE_VERSION"},
	{Err: ams.ErrConflict, Code: codes.FailedPrecondition, Reason: "CONFLICT"},
	{Err: ams.ErrNotInitialized, Code: codes.FailedPrecondition, Reason: "NOT_INITIALIZED"},
	{Err: ams.ErrRestore, Code: codes.FailedPrecondition, Reason: "RESTORE"},
	{Err: ams.ErrRoundApplied, Code: codes.FailedPrecondition, Reason: "ROUND_APPLIED"},
	{Err: ams.ErrNoExportBase, Code: codes.FailedPrecondition, Reason: "NO_EXPORT_BASE"},
	{Err: ams.ErrProtocol, Code: codes.FailedPrecondition, Reason: "PROTOCOL"},
	{Err: ams.ErrRoundAhead, Code: codes.OutOfRange, Reason: "ROUND_AHEAD"},
	{Err: ams.ErrDuplicatePush, Code: codes.AlreadyExists, Reason: "DUPLICATE_PUSH"},
	{Err: ams.ErrTier, Code: codes.Internal, Reason: "TIER"},
	{Err: ams.ErrStoreNotAllowed, Code: codes.PermissionDenied, Reason: "STORE_NOT_ALLOWED"},
	{Err: ams.ErrRoleNotAllowed, Code: codes.PermissionDenied, Reason: "ROLE_NOT_ALLOWED"},
	{Err: ams.ErrUnknownTable, Code: codes.NotFound, Reason: "UNKNOWN_TABLE"},
	{Err: ams.ErrUnknownDense, Code: codes.NotFound, Reason: "UNKNOWN_DENSE"},
	// gRPC itself refuses a message over its size limit (ams.MaxMessageBytes)
	// with RESOURCE_EXHAUSTED, before a shard sees it.
	{Err: ams.ErrTooLarge, Code: codes.ResourceExhausted, Reason: "TOO_LARGE", Bare: true},
	{Err: ams.ErrNonFinite, Code: codes.InvalidArgument, Reason: "NON_FINITE"},
	{Err: ams.ErrBadRequest, Code: codes.InvalidArgument, Reason: "BAD_REQUEST"},
	{Err: ams.ErrBadSpec, Code: codes.InvalidArgument, Reason: "BAD_SPEC"},
	{Err: ams.ErrDimMismatch, Code: codes.InvalidArgument, Reason: "DIM_MISMATCH"},
	{Err: ams.ErrBadShardMap, Code: codes.InvalidArgument, Reason: "BAD_SHARD_MAP"},
	{Err: ams.ErrClosed, Code: codes.Unavailable, Reason: "CLOSED"},
	{Err: ams.ErrUnavailable, Code: codes.Unavailable, Reason: "UNAVAILABLE", Bare: true},
	{Err: context.Canceled, Code: codes.Canceled, Reason: "CANCELED", Bare: true},
	{Err: context.DeadlineExceeded, Code: codes.DeadlineExceeded, Reason: "DEADLINE_EXCEEDED", Bare: true},
}

// ToStatus turns a shard's error into the status its server answers
// with: the code of the first entry of Errors that err matches
// (errors.Is; codes.Internal when none does), err's message, and one
// ErrorInfo detail naming each entry it matches. nil stays nil, and so
// does a status error that matches no entry.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	var infos []*errdetails.ErrorInfo
	for i := range Errors {
		e := &Errors[i]
		if !errors.Is(err, e.Err) {
			continue
		}
		if infos == nil {
			code = e.Code
		}
		infos = append(infos, &errdetails.ErrorInfo{Reason: e.Reason, Domain: ErrorDomain})
	}
	if infos == nil {
		if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
			return err
		}
	}
	st := status.New(code, err.Error())
	for _, info := range infos {
		if withInfo, derr := st.WithDetails(info); derr == nil {
			st = withInfo
		}
	}
	return st.Err()
}

// FromStatus turns the error of a call to a shard back into the errors
// the shard answered with: a status that names entries of Errors becomes
// an error that wraps each of their sentinels and the status itself,
// with the shard's message; a status that names none, with the code of a
// Bare entry, wraps that entry's sentinel. Any other error (nil, one
// that is no status, a status of another kind, or one FromStatus made)
// is returned as it is.
func FromStatus(err error) error {
	var we *wireError
	if err == nil || errors.As(err, &we) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	w := &wireError{msg: st.Message()}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			if e := byReason(info.Reason); e != nil {
				w.errs = append(w.errs, e.Err)
			}
		}
	}
	if len(w.errs) == 0 {
		e := bareCode(st.Code())
		if e == nil {
			return err
		}
		w.errs = append(w.errs, e.Err)
		if !strings.Contains(w.msg, e.Err.Error()) {
			w.msg = e.Err.Error() + ": " + w.msg
		}
	}
	w.errs = append(w.errs, err)
	return w
}

func byReason(reason string) *ErrorCode {
	for i := range Errors {
		if Errors[i].Reason == reason {
			return &Errors[i]
		}
	}
	return nil
}

func bareCode(code codes.Code) *ErrorCode {
	for i := range Errors {
		if Errors[i].Bare && Errors[i].Code == code {
			return &Errors[i]
		}
	}
	return nil
}

// wireError is an error a shard answered with over gRPC: the shard's
// message, the sentinels the status named and the status itself.
type wireError struct {
	msg  string
	errs []error // sentinels, then the status error
}

func (e *wireError) Error() string   { return e.msg }
func (e *wireError) Unwrap() []error { return e.errs }

// errorInterceptor makes every answer of an AMS server that fails a
// status of the error table (ToStatus): the service's methods return the
// shard's own errors.
func errorInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	return resp, ToStatus(err)
}
