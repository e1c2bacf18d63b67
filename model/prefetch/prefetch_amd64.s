//go:build amd64 && !purego

#include "textflag.h"

// func lines(p unsafe.Pointer, n uintptr)
//
// PREFETCHT0 on each line from the one holding p to the one holding
// p+n-1. A prefetch does not fault, so any address is safe.
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), CX // last byte
	ANDQ $-64, AX
	ANDQ $-64, CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLE loop
	RET
