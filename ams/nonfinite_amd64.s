//go:build amd64 && !purego

#include "textflag.h"

// nftail: 8 lanes of ones then 8 of zeros; the 8 int32s from lane 8-r
// are the mask of a row's last r = d%8 values.
DATA nftail<>+0(SB)/8, $0xffffffffffffffff
DATA nftail<>+8(SB)/8, $0xffffffffffffffff
DATA nftail<>+16(SB)/8, $0xffffffffffffffff
DATA nftail<>+24(SB)/8, $0xffffffffffffffff
DATA nftail<>+32(SB)/8, $0
DATA nftail<>+40(SB)/8, $0
DATA nftail<>+48(SB)/8, $0
DATA nftail<>+56(SB)/8, $0
GLOBL nftail<>(SB), RODATA|NOPTR, $64

// func anyNonFiniteAVX2(base *float32, rows int, pos *int32, n, d int) (found, ok bool)
//
// For k in [0, n): row k is the d float32s at base + pos[k]*d. found
// tells whether one of them has an exponent field of all ones (NaN or
// ±Inf): (bits & 0x7f800000) + 0x00800000 carries into the sign bit
// then and only then, so the sign bits of every row's words ORed
// together tell (AllFinite's loop, 8 lanes at a time; a row's last d%8
// values by a masked load, which reads nothing past the row). A position
// outside [0, rows) returns ok = false at once.
TEXT ·anyNonFiniteAVX2(SB), NOSPLIT, $0-42
	MOVQ base+0(FP), SI
	MOVQ rows+8(FP), R9
	MOVQ pos+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), DX
	MOVL $0x7f800000, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14      // the exponent field
	MOVL $0x00800000, AX
	MOVQ AX, X13
	VPBROADCASTD X13, Y13      // one in the exponent field
	MOVQ DX, R11
	ANDQ $7, R11               // r = d%8, the tail's values
	MOVQ $8, R10
	SUBQ R11, R10
	LEAQ nftail<>(SB), AX
	VMOVDQU (AX)(R10*4), Y12   // the tail's mask
	MOVQ DX, R8
	SHRQ $3, R8                // whole blocks of 8 per row
	SHLQ $2, DX                // row bytes
	VPXOR Y0, Y0, Y0           // the OR of every word's carry
	XORQ BX, BX                // k

nf_row:
	MOVLQSX (DI)(BX*4), AX     // pos[k]
	CMPQ AX, R9
	JAE nf_bad                 // negative or >= rows
	IMULQ DX, AX
	ADDQ SI, AX                // the row
	MOVQ R8, R10
	TESTQ R10, R10
	JEQ nf_tail

nf_block:
	VPAND (AX), Y14, Y1
	VPADDD Y13, Y1, Y1
	VPOR Y1, Y0, Y0
	ADDQ $32, AX
	DECQ R10
	JNE nf_block

nf_tail:
	TESTQ R11, R11
	JEQ nf_next
	VPMASKMOVD (AX), Y12, Y1
	VPAND Y14, Y1, Y1
	VPADDD Y13, Y1, Y1
	VPOR Y1, Y0, Y0

nf_next:
	INCQ BX
	CMPQ BX, CX
	JLT nf_row
	VMOVMSKPS Y0, AX           // the lanes' sign bits
	VZEROUPPER
	TESTL AX, AX
	SETNE found+40(FP)
	MOVB $1, ok+41(FP)
	RET

nf_bad:
	VZEROUPPER
	MOVB $0, found+40(FP)
	MOVB $0, ok+41(FP)
	RET
